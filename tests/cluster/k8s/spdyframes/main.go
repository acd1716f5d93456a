// spdyframes records frames as moby/spdystream's framer (the one client-go and the kubelet use)
// writes them, and decodes frames with it, for tests/streaming/test_spdy_framer_go.py.
//
//	spdyframes record   one frame a line: "<name> <hex>", client frames from one framer (one
//	                    compression context), then the server's SYN_REPLY from another
//	spdyframes decode   reads frames from stdin until EOF, one JSON object a line
//
// Built from the wrapper module's pinned spdystream (no network): go build ./spdyframes.
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/moby/spdystream/spdy"
)

func headers(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(pairs); i += 2 {
		h.Set(pairs[i], pairs[i+1]) // as client-go sets them: canonical keys, lower-cased on the wire
	}
	return h
}

func record() error {
	type named struct {
		name  string
		frame spdy.Frame
	}
	client := []named{
		{"syn_stream_error", &spdy.SynStreamFrame{StreamId: 1, Headers: headers("streamType", "error")}},
		{"syn_stream_portforward", &spdy.SynStreamFrame{StreamId: 3,
			Headers: headers("streamType", "data", "port", "8080", "requestID", "0")}},
		{"syn_stream_fin", &spdy.SynStreamFrame{CFHeader: spdy.ControlFrameHeader{Flags: spdy.ControlFlagFin},
			StreamId: 5, Headers: headers("streamType", "stdin")}},
		{"data", &spdy.DataFrame{StreamId: 3, Data: []byte("hello")}},
		{"data_fin", &spdy.DataFrame{StreamId: 3, Flags: spdy.DataFlagFin}},
		{"rst_stream", &spdy.RstStreamFrame{StreamId: 3, Status: spdy.Cancel}},
		{"ping", &spdy.PingFrame{Id: 1}},
		{"goaway", &spdy.GoAwayFrame{LastGoodStreamId: 5, Status: spdy.GoAwayOK}},
		{"settings", &spdy.SettingsFrame{FlagIdValues: []spdy.SettingsFlagIdValue{{Flag: 1, Id: 4, Value: 100}}}},
		{"window_update", &spdy.WindowUpdateFrame{StreamId: 3, DeltaWindowSize: 1024}},
		{"headers", &spdy.HeadersFrame{StreamId: 3, Headers: headers("streamType", "data")}},
	}
	server := []named{
		{"syn_reply_empty", &spdy.SynReplyFrame{StreamId: 1, Headers: http.Header{}}},
		{"syn_reply_empty_again", &spdy.SynReplyFrame{StreamId: 3, Headers: http.Header{}}},
	}
	for _, group := range [][]named{client, server} {
		var buf bytes.Buffer
		framer, err := spdy.NewFramer(&buf, &buf)
		if err != nil {
			return err
		}
		for _, f := range group {
			buf.Reset()
			if err := framer.WriteFrame(f.frame); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			fmt.Printf("%s %s\n", f.name, hex.EncodeToString(buf.Bytes()))
		}
	}
	return nil
}

func decode() error {
	framer, err := spdy.NewFramer(io.Discard, os.Stdin)
	if err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	for {
		frame, err := framer.ReadFrame()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var row map[string]any
		switch f := frame.(type) {
		case *spdy.SynStreamFrame:
			row = map[string]any{"type": "syn_stream", "id": f.StreamId, "flags": f.CFHeader.Flags, "headers": f.Headers}
		case *spdy.SynReplyFrame:
			row = map[string]any{"type": "syn_reply", "id": f.StreamId, "flags": f.CFHeader.Flags, "headers": f.Headers}
		case *spdy.HeadersFrame:
			row = map[string]any{"type": "headers", "id": f.StreamId, "flags": f.CFHeader.Flags, "headers": f.Headers}
		case *spdy.DataFrame:
			row = map[string]any{"type": "data", "id": f.StreamId, "flags": f.Flags, "data": string(f.Data)}
		case *spdy.RstStreamFrame:
			row = map[string]any{"type": "rst_stream", "id": f.StreamId, "status": f.Status}
		case *spdy.PingFrame:
			row = map[string]any{"type": "ping", "id": f.Id}
		case *spdy.GoAwayFrame:
			row = map[string]any{"type": "goaway", "id": f.LastGoodStreamId, "status": f.Status}
		default:
			row = map[string]any{"type": fmt.Sprintf("%T", f)}
		}
		if err := out.Encode(row); err != nil {
			return err
		}
	}
}

func main() {
	var err error
	switch {
	case len(os.Args) == 2 && os.Args[1] == "record":
		err = record()
	case len(os.Args) == 2 && os.Args[1] == "decode":
		err = decode()
	default:
		err = fmt.Errorf("usage: spdyframes record|decode")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spdyframes:", err)
		os.Exit(1)
	}
}
