package registry

import "sync"

// waitQueues keeps, per resource, the FIFO of acquires that wait for the
// lease. Only the head of a queue tries to acquire; it is signalled when it
// becomes head and whenever the resource may have become free (a release
// or a revocation). Expiry is caught by the head's own timer.
type waitQueues struct {
	mu sync.Mutex
	q  map[string][]chan struct{}
}

func newWaitQueues() *waitQueues { return &waitQueues{q: map[string][]chan struct{}{}} }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// enqueue adds a waiter at the tail; the head is signalled at once.
func (w *waitQueues) enqueue(resource string) chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.q[resource] = append(w.q[resource], ch)
	if len(w.q[resource]) == 1 {
		signal(ch)
	}
	return ch
}

// leave removes a waiter and signals the next head.
func (w *waitQueues) leave(resource string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.q[resource]
	for i, c := range q {
		if c == ch {
			q = append(q[:i], q[i+1:]...)
			if i == 0 && len(q) > 0 {
				signal(q[0])
			}
			break
		}
	}
	if len(q) == 0 {
		delete(w.q, resource)
		return
	}
	w.q[resource] = q
}

// notify wakes the head waiter of resource.
func (w *waitQueues) notify(resource string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if q := w.q[resource]; len(q) > 0 {
		signal(q[0])
	}
}

// notifyAll wakes every head (after an epoch bump or a policy change).
func (w *waitQueues) notifyAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.q {
		signal(q[0])
	}
}

// waiting counts the waiters of every resource.
func (w *waitQueues) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, q := range w.q {
		n += len(q)
	}
	return n
}

// wake wakes the head waiter of resource, or every head when resource is
// "" (a Notifier's "every resource").
func (w *waitQueues) wake(resource string) {
	if resource == "" {
		w.notifyAll()
		return
	}
	w.notify(resource)
}

// follow wakes the waiters of every resource received from ch (another
// process's ended leases, see Notifier) until ch is closed.
func (w *waitQueues) follow(ch <-chan string) {
	for resource := range ch {
		w.wake(resource)
	}
}
