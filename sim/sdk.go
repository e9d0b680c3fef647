package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// An SDK worker is a worker that is the Go SDK itself: a client.Holder
// (the real lease state machine, docs/design.md section 7) acquired with
// client.Client.Hold, writing through its client.Transport, recovering a
// lost answer with Transport.Recover, over the simulated network to the
// registry's real HTTP API (registry/httpapi) and to the sidecars.
//
// The SDK is ordinary blocking Go code, so the worker runs on a goroutine
// of its own, in strict alternation with the round's event loop: every
// place it waits is the simulation's (a request on the simulated network,
// a timer of its clock), where it hands control back (park) and blocks
// until the event loop answers at the virtual instant the network or the
// timer decides. Nothing else runs meanwhile, so a seed replays exactly.
// For that the Holder runs WithoutBackground: its keeper goroutine, whose
// waits the simulation could not see, is not started, and the worker
// renews with Holder.Renew when its script says, as the scripted workers
// do. What the keeper adds in production (renewing by itself at a third of
// the TTL, asking again while ownership is unknown) is therefore not
// modelled; everything the Holder decides from the registry's answers and
// its local deadline is.

// sdkWorker is one SDK worker.
type sdkWorker struct {
	r    *round
	o    *owner // its name, plan and hand-off bookkeeping
	park chan park
	// fate is the network's fate for the next request to fateHost: the
	// script's event for the call the worker is making (its other
	// requests meet no fault).
	fate     callFate
	fateHost string
	rng      *rand.Rand
	alive    bool
}

// callFate is what the network and the backend do to one request.
type callFate struct {
	net netPlan
	d   delivery
}

// park is the worker handing control back to the event loop: a request
// to send, a sleep, or its end.
type park struct {
	req   *http.Request
	body  []byte
	fate  callFate
	reply chan sdkReply
	sleep time.Duration
	wake  chan struct{}
	exit  bool
}

type sdkReply struct {
	resp *http.Response
	err  error
}

const (
	registryHost = "registry.sim"
	sidecarHost  = "sidecar-%d.sim"
)

// errLostExchange is what the SDK sees of a request or answer lost in
// the network: the call ran out of time.
var errLostExchange = fmt.Errorf("sim: no answer within the worker's timeout: %w", context.DeadlineExceeded)

// startSDK starts owner o as an SDK worker (its acquire event).
func (r *round) startSDK(o *owner, e event) {
	if o.sdk != nil {
		return
	}
	w := &sdkWorker{r: r, o: o, park: make(chan park), alive: true,
		rng: rand.New(rand.NewPCG(r.seed, uint64(o.id)+0x5d4))}
	o.sdk = w
	r.res.Seen[seenSDK]++
	o.asked, o.askedAt, o.askNet = true, r.now(), e.Net
	r.logf("%s: an SDK worker (client.Holder) starts", o.name)
	go w.run(e)
	r.handle(w, <-w.park)
}

// resume hands control to w (answering what it waits for) and handles what
// it does next.
func (r *round) resume(w *sdkWorker, answer func()) {
	answer()
	r.handle(w, <-w.park)
}

func (r *round) handle(w *sdkWorker, p park) {
	switch {
	case p.exit:
		w.alive = false
		r.logf("%s: the SDK worker ends", w.o.name)
	case p.wake != nil:
		r.after(p.sleep, "sdk timer", func() { r.resume(w, func() { close(p.wake) }) })
	default:
		r.sdkRequest(w, p)
	}
}

// sdkRequest carries one request of w through the network to the registry
// or a sidecar, and its answer back.
func (r *round) sdkRequest(w *sdkWorker, p park) {
	n := p.fate.net
	sent := r.now()
	if p.req.Method == http.MethodPut && p.req.URL.Host != registryHost {
		r.checkSDKSend(w)
	}
	answer := func(resp *http.Response, err error) {
		r.resume(w, func() { p.reply <- sdkReply{resp, err} })
	}
	lost := func() {
		// The worker gives up waiting at its timeout (and resends if it will).
		r.at(sent+answerTimeout, "sdk timeout", func() { answer(nil, errLostExchange) })
	}
	host := p.req.URL.Host
	deliver := func(dup bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(p.req.Method, p.req.URL.RequestURI(), bytes.NewReader(p.body))
		req.Header = p.req.Header.Clone()
		req.Host = host
		if host == registryHost {
			return r.serveRegistry(w, req)
		}
		replica, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(host, "sidecar-"), ".sim"))
		if err != nil {
			rec := httptest.NewRecorder()
			rec.WriteHeader(http.StatusBadGateway)
			return rec
		}
		if strings.HasPrefix(req.URL.Path, "/.fencegate/") {
			rec := httptest.NewRecorder()
			if px, err := r.proxyOf(replica % len(r.sidecars)); err == nil {
				px.ServeHTTP(rec, req)
			}
			return rec
		}
		d := p.fate.d
		if dup {
			d = delivery{}
		}
		rec, out := r.serveReq(req, replica, d)
		how := ""
		if dup {
			how = " (duplicate)"
		}
		r.logf("%s: %s %s%s at replica %d -> %v", w.o.name, req.Method, req.Header.Get(fencegate.HeaderSegment), how, replica%len(r.sidecars), out)
		return rec
	}
	if n.ReqDrop {
		r.logf("%s: %s %s lost on its way", w.o.name, p.req.Method, p.req.URL.Path)
		lost()
	} else {
		r.after(n.ReqDelay, "sdk delivery", func() {
			rec := deliver(false)
			if n.RespDrop || n.ReqDelay+n.RespDelay > answerTimeout {
				if n.RespDrop {
					r.logf("%s: the answer is lost", w.o.name)
				}
				lost()
				return
			}
			r.after(n.RespDelay, "sdk answer", func() {
				resp := rec.Result()
				resp.Request = p.req
				answer(resp, nil)
			})
		})
	}
	if n.Dup {
		r.after(n.ReqDelay+n.DupDelay, "sdk duplicate", func() { deliver(true) })
	}
}

// checkSDKSend checks the SDK's own promise (package client): a worker
// using it sends no write once it no longer knows that it holds its lease.
// When the write leaves the worker, the lease must not have expired or been
// released by the registry's truth. (A revocation or a registry restore it
// cannot know of is the sidecar's to refuse.)
func (r *round) checkSDKSend(w *sdkWorker) {
	li, ok := r.or.leases[w.o.lease]
	switch {
	case ok && li.restored:
		// A registry restore rewrote the lease's history (its renewals
		// are forgotten): the Holder cannot know; the sidecar decides.
	case !ok:
		r.violate(&r.res.SDKStale, fmt.Sprintf("%s's SDK sent a write under a lease unknown to the registry", w.o.name))
	case li.ended && li.cause == "released":
		r.violate(&r.res.SDKStale, fmt.Sprintf("%s's SDK sent a write after its lease %s was released", w.o.name, w.o.lease))
	case r.nowMs() >= li.expiresAt:
		r.violate(&r.res.SDKStale, fmt.Sprintf("%s's SDK sent a write %s after its lease %s expired", w.o.name,
			time.Duration(r.nowMs()-li.expiresAt)*time.Millisecond, w.o.lease))
	}
}

// serveRegistry serves a request of worker w at the registry's HTTP API
// and tells the oracle what the registry answered.
func (r *round) serveRegistry(w *sdkWorker, req *http.Request) *httptest.ResponseRecorder {
	h, err := r.registryAPI()
	rec := httptest.NewRecorder()
	if err != nil {
		r.logf("registry API: %v", err)
		rec.WriteHeader(http.StatusServiceUnavailable)
		return rec
	}
	release := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/release")
	if release {
		w.o.releasedAt, w.o.releaseSeen = r.now(), true
		if r.sabotage == SabotageReleaseIgnored {
			// The registry answers the release but keeps the lease: the
			// answer it gives is the lease's status.
			id := strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, "/v1/leases/"), "/release")
			req = httptest.NewRequest(http.MethodGet, "/v1/leases/"+id+"/status", nil)
			req.Header.Set(identity.DefaultHeader, w.o.name)
			r.logf("%s: the registry answers the release but keeps the lease", w.o.name)
		}
	}
	h.ServeHTTP(rec, req)
	what := req.Method + " " + req.URL.Path
	if rec.Code >= 300 {
		r.logf("%s: registry %s -> %d %s", w.o.name, what, rec.Code, problemCode(rec.Body.Bytes()))
		return rec
	}
	var l fencegate.Lease
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || l.Lease == "" {
		return rec
	}
	g := r.or.wire(&l)
	if l.State == fencegate.StateReleased && release {
		r.or.end(l.Lease, r.now(), "released")
	}
	if g != nil {
		w.o.lease, w.o.fence = l.Lease, g.fence
	}
	r.logf("%s: registry %s -> lease %s fence %d %s until %s", w.o.name, what, l.Lease, l.FenceToken, l.State, l.ExpiresAt.Sub(r.start))
	return rec
}

func problemCode(body []byte) fencegate.Code {
	var p struct {
		Code fencegate.Code `json:"code"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Code
}

// registryAPI is the registry's HTTP handler over the round's registry
// (built again after a restart with another key).
func (r *round) registryAPI() (http.Handler, error) {
	if r.api != nil && r.apiFor == r.reg {
		return r.api, nil
	}
	ident, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		return nil, err
	}
	h, err := httpapi.New(httpapi.Options{Registry: r.reg, Identity: ident, JWKS: r.m.jwks, Metrics: discardMetrics{}})
	if err != nil {
		return nil, err
	}
	r.api, r.apiFor = h, r.reg
	return h, nil
}

// RoundTrip is the worker's side of the simulated network: it hands the
// request to the event loop and waits for the answer. The connection is
// taken to be established (a lost answer is an unknown outcome to the
// SDK, as it is).
func (w *sdkWorker) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	if t := httptrace.ContextClientTrace(req.Context()); t != nil && t.GotConn != nil {
		t.GotConn(httptrace.GotConnInfo{})
	}
	var fate callFate
	if w.fateHost != "" && req.URL.Host == w.fateHost {
		fate, w.fateHost = w.fate, ""
	}
	reply := make(chan sdkReply)
	w.park <- park{req: req, body: body, fate: fate, reply: reply}
	a := <-reply
	return a.resp, a.err
}

// sleep waits d of virtual time.
func (w *sdkWorker) sleep(d time.Duration) {
	wake := make(chan struct{})
	w.park <- park{sleep: d, wake: wake}
	<-wake
}

// workerClock is an SDK worker's clock: the round's virtual clock, whose
// timers park the worker until the event loop reaches their deadline.
// Under SabotageSDKSlowClock it runs at half the rate from t0.
type workerClock struct {
	w    *sdkWorker
	slow bool
	t0   time.Time
}

func (c workerClock) Now() time.Time {
	now := c.w.r.clk.Now()
	if c.slow {
		return c.t0.Add(now.Sub(c.t0) / 2)
	}
	return now
}

// NewTimer waits d (the worker parks) and returns a timer that has fired:
// the SDK's only timers are the waits of clock.Sleep.
func (c workerClock) NewTimer(d time.Duration) clock.Timer {
	if c.slow {
		d *= 2
	}
	if d > 0 {
		c.w.sleep(d)
	}
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return firedTimer{ch}
}

func (c workerClock) NewTicker(time.Duration) clock.Ticker {
	panic("sim: an SDK worker running WithoutBackground has no ticker")
}

type firedTimer struct{ ch chan time.Time }

func (t firedTimer) C() <-chan time.Time      { return t.ch }
func (t firedTimer) Stop() bool               { return false }
func (t firedTimer) Reset(time.Duration) bool { return false }

// expect sets the fate of the next request to host.
func (w *sdkWorker) expect(host string, f callFate) { w.fate, w.fateHost = f, host }

func (w *sdkWorker) logf(format string, args ...any) { w.r.logf(w.o.name+": "+format, args...) }

// run is the worker's program: the SDK's calls in the order of the
// script's plan. It runs on the worker's goroutine.
func (w *sdkWorker) run(acq event) {
	defer func() { w.park <- park{exit: true} }()
	r, o := w.r, w.o
	cfg := r.sc.Config
	ctx := context.Background()
	net := &http.Client{Transport: w}
	rc, err := client.New("http://"+registryHost, client.WithHTTPClient(net), client.WithIdentityHeader(identity.DefaultHeader, o.name))
	if err != nil {
		w.logf("client: %v", err)
		return
	}
	var h *client.Holder
	for poll := 1; ; poll++ {
		if poll == 1 {
			w.expect(registryHost, callFate{net: acq.Net})
		}
		h, err = rc.Hold(ctx, mainResource, client.WithTTL(cfg.TTL), client.WithRequestID("req-"+o.name+"-1"),
			client.WithClock(workerClock{w: w, slow: r.sabotage == SabotageSDKSlowClock, t0: r.clk.Now()}), client.WithRandom(w.rng.Float64), client.WithAttemptTimeout(answerTimeout),
			client.WithoutBackground())
		if errors.Is(err, client.ErrLeaseHeld) && r.now() < horizon && poll < 400 {
			w.sleep(pollInterval)
			continue
		}
		break
	}
	if err != nil {
		w.logf("Hold: %v", err)
		return
	}
	defer func() {
		if err := h.Release(ctx); err != nil {
			w.logf("Release: %v", err)
		}
	}()
	o.holding, o.granted, o.grantedAt = true, true, r.now()
	w.logf("holds lease %s, fence %d (%s)", h.LeaseID(), h.Fence(), h.State())
	opts := []client.TransportOption{client.WithBase(w), client.WithHeader(identity.DefaultHeader, o.name)}
	if cfg.Proof {
		opts = append(opts, client.WithStatusProof(cfg.MaxAge))
	}
	tr := h.Transport(opts...)
	hc := tr.Client()
	seq := uint64(1)
	for _, e := range o.plan {
		w.sleep(e.At)
		w.logf("%v", e)
		switch e.Kind {
		case evRenew:
			w.expect(registryHost, callFate{net: e.Net})
			st, err := h.Renew(ctx)
			w.logf("renewed: %s (%v)", st, err)
		case evRelease:
			w.expect(registryHost, callFate{net: e.Net})
			err := h.Release(ctx)
			w.logf("released: %s (%v)", h.State(), err)
		case evWrite:
			if e.Zombie || o.releaseSeen {
				// After Release the Transport refuses locally: shown once.
				_, err := do(hc, w.put(ctx, e, seq, "zombie"))
				w.logf("a write after the release: %v", err)
				r.res.Seen[seenSDKLocal] += countIf(errors.Is(err, client.ErrNotHolding))
				return
			}
			if !w.write(ctx, hc, tr, h, e, seq) {
				return
			}
			seq++
		}
	}
}

// do sends req through the SDK's client, with the sidecar's refusal as
// the error (client.ResponseError; the response's body closed), as a
// worker reads it.
func do(hc *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if verr := client.ResponseError(resp); verr != nil {
		resp.Body.Close()
		return nil, verr
	}
	return resp, nil
}

func countIf(b bool) int {
	if b {
		return 1
	}
	return 0
}

// put is the request of segment seq.
func (w *sdkWorker) put(ctx context.Context, e event, seq uint64, tag string) *http.Request {
	body := fmt.Sprintf("%s/f%d/s%d", w.o.name, w.o.fence, seq)
	if tag != "" {
		body += "/" + tag
	}
	u := fmt.Sprintf("http://"+sidecarHost+"%s", e.Replica%len(w.r.sidecars), mainPath)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, u, strings.NewReader(body))
	req.Header.Set(fencegate.HeaderSegment, strconv.FormatUint(seq, 10))
	return req
}

// write sends segment seq until it is accepted (true) or the worker must
// stop (false), reacting to each answer as a worker with the SDK would.
func (w *sdkWorker) write(ctx context.Context, hc *http.Client, tr *client.Transport, h *client.Holder, e event, seq uint64) bool {
	r, o := w.r, w.o
	if seq == 1 && !o.firstSent {
		o.firstSent, o.firstSentAt, o.firstNet, o.firstLate = true, r.now(), e.Net, e.Late
	}
	for try := 1; try <= 4 && r.now() <= horizon; try++ {
		if try == 1 {
			w.expect(fmt.Sprintf(sidecarHost, e.Replica%len(r.sidecars)), callFate{net: e.Net, d: delivery{fault: e.Fault,
				statusDrop: e.Net.StatusDrop, storeMid: e.StoreMid, storeRestore: e.Restore, late: e.Late}})
		}
		resp, err := do(hc, w.put(ctx, e, seq, ""))
		var rej *client.RejectionError
		switch {
		case err == nil:
			resp.Body.Close()
			w.logf("segment %d accepted: %d, receipt %s", seq, resp.StatusCode, resp.Header.Get(fencegate.HeaderReceipt))
			return true
		case errors.Is(err, client.ErrReplayIncomplete):
			return true
		case errors.Is(err, client.ErrNotHolding):
			r.res.Seen[seenSDKLocal]++
			st, cerr := h.Check(ctx)
			w.logf("segment %d refused by the SDK (%v); the registry says %s (%v)", seq, err, st, cerr)
			if !st.Usable() {
				return false
			}
		case errors.Is(err, client.ErrOutcomeUnknown), errors.Is(err, client.ErrMutationUnknown):
			if errors.As(err, &rej) && rej.StatusCode == http.StatusConflict {
				if seq == 1 {
					o.blocked = true // another mutation's outcome is unknown
				}
			}
			if rc, rerr := tr.Recover(ctx, err); rerr == nil {
				w.logf("segment %d: outcome unknown (%v), but the sidecar holds receipt %s", seq, err, rc.ID)
				return true
			}
			w.logf("segment %d: outcome unknown (%v), no receipt yet", seq, err)
			w.sleep(2 * time.Second)
		case errors.Is(err, client.ErrStatusStale):
			w.expect(registryHost, callFate{})
			st, rerr := h.Renew(ctx)
			w.logf("segment %d: %v; renewed: %s (%v)", seq, err, st, rerr)
			w.sleep(50 * time.Millisecond)
		case errors.Is(err, client.ErrRegistryUnavailable), errors.Is(err, client.ErrBackendUnavailable),
			errors.Is(err, client.ErrStoreUnavailable), errors.Is(err, client.ErrResourceBusy):
			w.logf("segment %d: %v; again", seq, err)
			w.sleep(200 * time.Millisecond)
		default:
			w.logf("segment %d: %v; stops", seq, err)
			return false
		}
	}
	w.logf("gives up segment %d", seq)
	return false
}

var _ http.RoundTripper = (*sdkWorker)(nil)
