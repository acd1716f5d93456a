"""core/v1 Events as the kubelet's legacy recorder posts them (client-go tools/record).

reasons: the kubelet's reason names (pkg/kubelet/events/event.go); model: the Event object, its
involvedObject references and names; correlator: the EventCorrelator (spam filter, aggregation,
counting); recorder: the queue and the sender (create or patch, retries), and the null recorder
of a standalone node. Consumers declare the narrow protocol they record through, beside
themselves; only the composition root builds a recorder.
"""
