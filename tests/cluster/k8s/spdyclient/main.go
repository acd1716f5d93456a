// spdyclient is the tests' Go client for the kubelet's SPDY/3.1 streaming endpoints: client-go's
// own SPDY executor and port forwarder (what kubectl and the API server use), straight against a
// kubelet URL with a client certificate.
//
//	spdyclient [flags] exec URL          exec or attach (/exec/..., /attach/...): stdin, stdout and
//	                                     stderr are this process's own, as the URL's input, output,
//	                                     error and tty parameters ask; exits with the remote exit code
//	spdyclient [flags] portforward URL L:R...  forwards 127.0.0.1:L to the pod's port R (L 0: any);
//	                                     prints "ready <local port>..." and forwards until stdin closes
//	spdyclient [flags] dial URL PROTO... upgrades with these X-Stream-Protocol-Version values only and
//	                                     prints the one the server chose, or the refusal
//
// Flags: -ca, -cert, -key (PEM files), -protocol P (exec: offer only these, repeatable), -size WxH (tty: the terminal size; repeat it to resize, one
// size every -resize-every), -timeout. Any failure other than a remote exit code exits 1 with a
// message on stderr beginning "spdyclient: ".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
)

type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(value string) error {
	*l = append(*l, value)
	return nil
}

type sizes []remotecommand.TerminalSize

func (s *sizes) String() string { return fmt.Sprint(*s) }

func (s *sizes) Set(value string) error {
	w, h, ok := strings.Cut(value, "x")
	width, errW := strconv.ParseUint(w, 10, 16)
	height, errH := strconv.ParseUint(h, 10, 16)
	if !ok || errW != nil || errH != nil {
		return fmt.Errorf("want WIDTHxHEIGHT, got %q", value)
	}
	*s = append(*s, remotecommand.TerminalSize{Width: uint16(width), Height: uint16(height)})
	return nil
}

// sizeQueue hands out the -size values, one every `every`, then blocks until the stream ends.
type sizeQueue struct {
	ctx   context.Context
	sizes sizes
	every time.Duration
	sent  int
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	if q.sent >= len(q.sizes) {
		<-q.ctx.Done()
		return nil
	}
	if q.sent > 0 {
		select {
		case <-time.After(q.every):
		case <-q.ctx.Done():
			return nil
		}
	}
	q.sent++
	return &q.sizes[q.sent-1]
}

type options struct {
	ca, cert, key string
	protocols     list
	sizes         sizes
	resizeEvery   time.Duration
	timeout       time.Duration
}

func main() {
	var opt options
	flag.StringVar(&opt.ca, "ca", "", "CA bundle (PEM) the server's certificate must chain to")
	flag.StringVar(&opt.cert, "cert", "", "client certificate (PEM)")
	flag.StringVar(&opt.key, "key", "", "client key (PEM)")
	flag.Var(&opt.protocols, "protocol", "exec: offer only these protocols (repeat; default client-go's list)")
	flag.Var(&opt.sizes, "size", "tty size WIDTHxHEIGHT (repeat to resize)")
	flag.DurationVar(&opt.resizeEvery, "resize-every", 200*time.Millisecond, "delay between -size values")
	flag.DurationVar(&opt.timeout, "timeout", 60*time.Second, "give up after this long")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 {
		fail(errors.New("usage: spdyclient [flags] exec|portforward|dial URL [args...]"))
	}
	target, err := url.Parse(args[1])
	if err != nil {
		fail(err)
	}
	config := &rest.Config{
		Host:            target.Scheme + "://" + target.Host,
		TLSClientConfig: rest.TLSClientConfig{CAFile: opt.ca, CertFile: opt.cert, KeyFile: opt.key},
	}
	ctx, cancel := context.WithTimeout(context.Background(), opt.timeout)
	defer cancel()
	switch args[0] {
	case "exec", "attach":
		err = stream(ctx, config, target, opt)
	case "portforward":
		err = forward(ctx, config, target, args[2:])
	case "dial":
		err = dial(config, target, args[2:])
	default:
		err = fmt.Errorf("unknown command %q", args[0])
	}
	var exit utilexec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		fmt.Fprintf(os.Stderr, "spdyclient: exit code %d: %v\n", exit.ExitStatus(), err)
		os.Exit(exit.ExitStatus())
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "spdyclient: %v\n", err)
	os.Exit(1)
}

// stream runs an exec or attach with the streams the URL asks for.
func stream(ctx context.Context, config *rest.Config, target *url.URL, opt options) error {
	executor, err := remotecommand.NewSPDYExecutor(config, http.MethodPost, target)
	if len(opt.protocols) > 0 {
		transport, upgrader, terr := spdy.RoundTripperFor(config)
		if terr != nil {
			return terr
		}
		executor, err = remotecommand.NewSPDYExecutorForProtocols(transport, upgrader, http.MethodPost, target, opt.protocols...)
	}
	if err != nil {
		return err
	}
	query := target.Query()
	streams := remotecommand.StreamOptions{Tty: query.Get("tty") == "1"}
	if query.Get("input") == "1" {
		streams.Stdin = os.Stdin
	}
	if query.Get("output") == "1" {
		streams.Stdout = os.Stdout
	}
	if query.Get("error") == "1" {
		streams.Stderr = os.Stderr
	}
	if len(opt.sizes) > 0 {
		streams.TerminalSizeQueue = &sizeQueue{ctx: ctx, sizes: opt.sizes, every: opt.resizeEvery}
	}
	return executor.StreamWithContext(ctx, streams)
}

// dialer is client-go's SPDY dialer for target; the transport it wraps remembers the answer's
// status and accepted protocols, which client-go's error leaves out.
func dialer(config *rest.Config, target *url.URL) (*recorder, httpstream.Dialer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return nil, nil, err
	}
	rec := &recorder{next: transport}
	return rec, spdy.NewDialer(upgrader, &http.Client{Transport: rec}, http.MethodPost, target), nil
}

type recorder struct {
	next     http.RoundTripper
	status   int
	accepted []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if resp != nil {
		r.status = resp.StatusCode
		r.accepted = resp.Header.Values("X-Accepted-Stream-Protocol-Versions")
	}
	return resp, err
}

func dial(config *rest.Config, target *url.URL, protocols []string) error {
	rec, d, err := dialer(config, target)
	if err != nil {
		return err
	}
	conn, protocol, err := d.Dial(protocols...)
	if err != nil {
		return fmt.Errorf("status %d, accepted %q: %w", rec.status, rec.accepted, err)
	}
	defer conn.Close()
	fmt.Printf("status %d protocol %q\n", rec.status, protocol)
	return nil
}

// forward port-forwards from 127.0.0.1 until stdin closes or the connection ends.
func forward(ctx context.Context, config *rest.Config, target *url.URL, ports []string) error {
	_, d, err := dialer(config, target)
	if err != nil {
		return err
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, ports, stop, ready, os.Stderr, os.Stderr)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return err
	}
	bound, err := fw.GetPorts()
	if err != nil {
		return err
	}
	line := []string{"ready"}
	for _, p := range bound {
		line = append(line, strconv.Itoa(int(p.Local)))
	}
	fmt.Println(strings.Join(line, " "))
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
