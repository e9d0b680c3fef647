package faultproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/faultproxy"
)

func setup(t *testing.T) (*faultproxy.Proxy, *atomic.Int64, *http.Client) {
	t.Helper()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		served.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	p, err := faultproxy.Start(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	return p, &served, hc
}

func post(hc *http.Client, url string) (string, error) {
	resp, err := hc.Post(url, "text/plain", strings.NewReader("hello"))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestPassAndDropResponse(t *testing.T) {
	p, served, hc := setup(t)
	if body, err := post(hc, p.URL()); err != nil || body != "ok" {
		t.Fatalf("pass: %q %v", body, err)
	}
	p.SetModeN(faultproxy.DropResponse, 1)
	if _, err := post(hc, p.URL()); err == nil {
		t.Fatal("drop-response: the answer came back")
	}
	if served.Load() != 2 {
		t.Fatalf("drop-response: the request was not delivered (served %d)", served.Load())
	}
	if p.Mode() != faultproxy.Pass || p.Stats().DroppedResponses != 1 {
		t.Fatalf("after one drop: mode %s, stats %+v", p.Mode(), p.Stats())
	}
	if body, err := post(hc, p.URL()); err != nil || body != "ok" {
		t.Fatalf("back to pass: %q %v", body, err)
	}
}

func TestCutAndRefuseDeliverNothing(t *testing.T) {
	for _, m := range []faultproxy.Mode{faultproxy.Cut, faultproxy.Refuse} {
		t.Run(m.String(), func(t *testing.T) {
			p, served, hc := setup(t)
			if _, err := post(hc, p.URL()); err != nil { // an idle keep-alive connection
				t.Fatal(err)
			}
			p.SetMode(m)
			if _, err := post(hc, p.URL()); err == nil {
				t.Fatalf("%s: the request got an answer", m)
			}
			if served.Load() != 1 || p.Stats().RequestBytes == 0 {
				t.Fatalf("%s: served %d", m, served.Load())
			}
			p.SetMode(faultproxy.Pass)
			if _, err := post(hc, p.URL()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSetModeThen(t *testing.T) {
	p, served, hc := setup(t)
	p.SetModeThen(faultproxy.DropResponse, 1, faultproxy.Refuse)
	if _, err := post(hc, p.URL()); err == nil {
		t.Fatal("the first answer came back")
	}
	if _, err := post(hc, p.URL()); err == nil {
		t.Fatal("refuse after the drop: answered")
	}
	if served.Load() != 1 || p.Mode() != faultproxy.Refuse || p.Stats().RefusedConnections == 0 {
		t.Fatalf("served %d mode %s stats %+v", served.Load(), p.Mode(), p.Stats())
	}
}

func TestDelayStillDelivers(t *testing.T) {
	p, served, hc := setup(t)
	p.SetDelay(5 * time.Millisecond)
	p.SetMode(faultproxy.Delay)
	if body, err := post(hc, p.URL()); err != nil || body != "ok" || served.Load() != 1 {
		t.Fatalf("delay: %q %v", body, err)
	}
	// A long delay is a black hole until the proxy closes.
	p.SetDelay(time.Hour)
	done := make(chan error, 1)
	go func() { _, err := post(hc, p.URL()); done <- err }()
	time.Sleep(20 * time.Millisecond)
	p.Close()
	if err := <-done; err == nil {
		t.Fatal("a black-holed request got an answer")
	}
}
