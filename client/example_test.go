package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/internal/faultproxy"
)

// A worker writes a batch in three ordered segments through its sidecar:
// it holds the lease, and every segment goes out under the grant, strictly
// in order, each only while the worker knows it still holds the lease.
func Example() {
	// A real registry, a legacy backend and a sidecar in front of it,
	// started in this process for the example.
	demo, err := startStack()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer demo.stop()
	registryURL, sidecarURL := demo.regURL, demo.sidecar
	ctx := context.Background()

	// The worker's identity: mTLS in production (client.WithTLSFiles and a
	// Transport base with the same certificate); a header in this demo.
	reg, err := client.New(registryURL, client.WithIdentityHeader("X-Fencegate-Identity", "worker-7"))
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := reg.Hold(ctx, "batch/2026-07-19", client.WithTTL(10*time.Second), client.WithWait(30*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release(ctx)
	fmt.Println("lease:", h.State())

	// The Transport adds Fence-Grant and Fence-Segment, and refuses
	// locally once the worker no longer knows that it holds the lease.
	tr := h.Transport(client.WithHeader("X-Fencegate-Identity", "worker-7"))
	parts := []string{"invoices 1-1000", "invoices 1001-2000", "invoices 2001-2417"}
	rep, err := tr.RunSegments(ctx, len(parts), func(ctx context.Context, seq uint64) (*http.Request, error) {
		// Computed concurrently; submitted in order.
		return http.NewRequestWithContext(ctx, http.MethodPut, sidecarURL+"/v1/batches/2026-07-19", strings.NewReader(parts[seq-1]))
	})
	switch {
	case errors.Is(err, client.ErrStaleOwner):
		fmt.Println("a newer owner took over; stop")
	case errors.Is(err, client.ErrNotHolding):
		fmt.Println("ownership lost; stop")
	case err != nil:
		fmt.Println(err)
	}
	for _, seg := range rep.Accepted {
		fmt.Printf("segment %d: %d, receipt %t\n", seg.Seq, seg.StatusCode, seg.Receipt != "")
	}
	if err := h.Release(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println("lease:", h.State())
	// Output:
	// lease: HELD
	// segment 1: 200, receipt true
	// segment 2: 200, receipt true
	// segment 3: 200, receipt true
	// lease: RELEASED
}

// A Holder's Transport in an ordinary http.Client: a single write; the
// sidecar's refusals come back as responses, typed by client.ResponseError.
func ExampleHolder_Transport() {
	demo, err := startStack()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer demo.stop()
	ctx := context.Background()
	reg, _ := client.New(demo.regURL, client.WithIdentityHeader("X-Fencegate-Identity", "worker-7"))
	h, err := reg.Hold(ctx, "batch/2026-07-20")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release(ctx)
	hc := h.Transport(client.WithHeader("X-Fencegate-Identity", "worker-7")).Client()

	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, demo.sidecar+"/v1/batches/2026-07-20", strings.NewReader("total=1350"))
	resp, err := hc.Do(req) // segment 1
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get(fencegate.HeaderReceipt) != "")

	// Segment 3 before segment 2: the sidecar refuses. The refusal is a
	// response (err == nil); client.ResponseError types it.
	req, _ = http.NewRequestWithContext(client.ContextWithSegment(ctx, 3), http.MethodPut, demo.sidecar+"/v1/batches/2026-07-20", strings.NewReader("x"))
	resp, err = hc.Do(req)
	if err != nil {
		fmt.Println(err) // nothing sent, or the outcome is unknown
		return
	}
	defer resp.Body.Close()
	err = client.ResponseError(resp)
	var rej *client.RejectionError
	if errors.As(err, &rej) {
		fmt.Println(errors.Is(err, client.ErrSegmentGap), rej.StatusCode, rej.Code())
	}
	// Output:
	// 200 true
	// true 409 SEGMENT_GAP
}

// Fence, operation root and segment travel with an asynchronous message,
// so the downstream worker writes under the upstream grant.
func ExampleHandoff() {
	m := client.Handoff{Resource: "invoice-batch/2026-07-19", Lease: "lease-91", Fence: 8842,
		OperationRoot: "sha256:51c0", Segment: 3}
	headers := m.Map() // e.g. Kafka record headers
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s: %s\n", k, headers[k])
	}

	got, err := client.HandoffFromMap(headers) // in the downstream worker
	fmt.Println(got.Fence, got.OperationID(), err)

	headers[fencegate.HeaderSegment] = "0" // a broken message
	_, err = client.HandoffFromMap(headers)
	fmt.Println(errors.Is(err, client.ErrInvalidHandoff))
	// Output:
	// Fence-Lease: lease-91
	// Fence-Operation-Root: sha256:51c0
	// Fence-Resource: invoice-batch/2026-07-19
	// Fence-Segment: 3
	// Fence-Token: 8842
	// 8842 sha256:51c0/3 <nil>
	// true
}

// A worker acquires a lease, waiting for the current holder if need be,
// and writes through its sidecar. The wait is not taken from the lease:
// Hold returns a Holder with its whole TTL ahead. The sidecar's verdict
// is read from the response with client.ResponseError.
func ExampleClient_Hold() {
	demo, err := startStack()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer demo.stop()
	ctx := context.Background()
	reg, err := client.New(demo.regURL, client.WithIdentityHeader("X-Fencegate-Identity", "worker-7"))
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := reg.Hold(ctx, "batch/2026-07-21", client.WithTTL(10*time.Second), client.WithWait(time.Minute))
	if err != nil {
		fmt.Println(err) // client.ErrLeaseHeld once the wait ran out, *client.AcquireUnknownError ...
		return
	}
	defer h.Release(ctx)
	fmt.Println("lease:", h.State(), "fence", h.Fence())

	hc := h.Transport(client.WithHeader("X-Fencegate-Identity", "worker-7")).Client()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, demo.sidecar+"/v1/batches/2026-07-21", strings.NewReader("total=1350"))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := hc.Do(req)
	if err != nil {
		fmt.Println(err) // nothing sent (client.ErrNotHolding, client.ErrNotSent) or client.ErrOutcomeUnknown
		return
	}
	defer resp.Body.Close()
	if err := client.ResponseError(resp); err != nil {
		fmt.Println(err) // the sidecar refused: errors.Is(err, client.ErrStaleOwner) ...
		return
	}
	answer, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %q, receipt %t\n", resp.StatusCode, answer, resp.Header.Get(fencegate.HeaderReceipt) != "")
	// Output:
	// lease: HELD fence 1
	// 200 "stored total=1350\n", receipt true
}

// The Holder's Context ends when ownership is lost for good: here, by the
// release; context.Cause says why.
func ExampleHolder_Context() {
	demo, err := startStack()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer demo.stop()
	ctx := context.Background()
	reg, _ := client.New(demo.regURL, client.WithIdentityHeader("X-Fencegate-Identity", "worker-7"))
	h, err := reg.Hold(ctx, "batch/2026-07-22")
	if err != nil {
		fmt.Println(err)
		return
	}
	work := h.Context() // the lease's work runs under it
	fmt.Println("working:", work.Err() == nil)

	if err := h.Release(ctx); err != nil {
		fmt.Println(err)
	}
	select { // cancelled by the time Release returns
	case <-work.Done():
		fmt.Println(context.Cause(work))
	default:
		fmt.Println("still working after the release")
	}
	// Output:
	// working: true
	// client: not holding the lease (state RELEASED)
}

// The sidecar accepted a write but its answer was lost on the way back:
// the Transport says the outcome is unknown, with the operation ID, and
// Recover asks the sidecar's receipt API whether it was accepted. It was:
// do not redo the work.
func ExampleTransport_Recover() {
	demo, err := startStack()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer demo.stop()
	ctx := context.Background()
	reg, _ := client.New(demo.regURL, client.WithIdentityHeader("X-Fencegate-Identity", "worker-7"))
	h, err := reg.Hold(ctx, "batch/2026-07-23")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader("X-Fencegate-Identity", "worker-7"))

	demo.sidecarFP.SetModeN(faultproxy.DropResponse, 1) // the demo loses the sidecar's next answer
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, demo.sidecar+"/v1/batches/2026-07-23", strings.NewReader("total=99"))
	_, err = tr.Client().Do(req) //nolint:bodyclose // no response: the answer was lost
	fmt.Println("outcome unknown:", errors.Is(err, client.ErrOutcomeUnknown))

	rc, rerr := tr.Recover(ctx, err)
	switch {
	case rerr == nil:
		fmt.Println("accepted: segment", rc.Seq, "backend status", rc.BackendStatus, "receipt", strings.HasPrefix(rc.ID, "rcpt-"))
	case errors.Is(rerr, client.ErrNoReceipt):
		fmt.Println("not proven either way: settle it before sending it again")
	default:
		fmt.Println(rerr)
	}
	// Output:
	// outcome unknown: true
	// accepted: segment 1 backend status 200 receipt true
}

// An upstream worker hands segment 2 of its grant to a downstream worker
// with a queue message; the downstream worker, which holds no lease of
// its own, writes it under the upstream grant with a plain http.Client.
func ExampleHolder_Handoff() {
	demo, err := startStack()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer demo.stop()
	ctx := context.Background()
	reg, _ := client.New(demo.regURL, client.WithIdentityHeader("X-Fencegate-Identity", "worker-7"))
	h, err := reg.Hold(ctx, "batch/2026-07-24")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release(ctx)

	// Upstream: segment 1 itself, then segment 2 goes with the message.
	hc := h.Transport(client.WithHeader("X-Fencegate-Identity", "worker-7")).Client()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, demo.sidecar+"/v1/batches/2026-07-24", strings.NewReader("header"))
	if resp, err := hc.Do(req); err == nil {
		fmt.Println("upstream segment 1:", resp.StatusCode, client.ResponseError(resp))
		resp.Body.Close()
	}
	message := h.Handoff(2).Map() // e.g. Kafka record headers

	// Downstream, in another process.
	m, err := client.HandoffFromMap(message)
	if err != nil {
		fmt.Println(err) // client.ErrInvalidHandoff
		return
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPut, demo.sidecar+"/v1/batches/2026-07-24", strings.NewReader("lines"))
	req.Header.Set("X-Fencegate-Identity", "worker-7") // the downstream worker's identity (mTLS in production)
	m.Apply(req)                                       // Fence-Grant and Fence-Segment: 2
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println("downstream segment", m.Segment, "fence", m.Fence, ":", resp.StatusCode, client.ResponseError(resp))
	// Output:
	// upstream segment 1: 200 <nil>
	// downstream segment 2 fence 1 : 200 <nil>
}
