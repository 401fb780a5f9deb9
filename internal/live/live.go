// Package live carries what is not durable from the activities that see
// it to the readers on the same axlrd: the provider's tokens, as a model
// request receives them, to the service API's event streams. Nothing here
// is kept: a reader that is not subscribed when a delta is published, or
// whose buffer is full, never sees it, and the durable events (history,
// the session log) stand in for what it missed.
package live

import (
	"sync"

	"github.com/underpass-ai/axlr/contract"
)

// Broker fans each published event out to the subscribers of its key (a
// workflow id). It is safe for concurrent use; its zero value is ready.
type Broker struct {
	mu   sync.Mutex
	subs map[string]map[*Sub]struct{}
}

// Sub is one subscription: C receives the events of its key, in the order
// they were published, until it is cancelled.
type Sub struct {
	C chan contract.Event
}

// Subscribe subscribes to key's events with a buffer of size events; the
// returned func cancels it (once; C is not closed, so a reader selects on
// its own done channel too).
func (b *Broker) Subscribe(key string, size int) (*Sub, func()) {
	s := &Sub{C: make(chan contract.Event, max(size, 1))}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[string]map[*Sub]struct{}{}
	}
	if b.subs[key] == nil {
		b.subs[key] = map[*Sub]struct{}{}
	}
	b.subs[key][s] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return s, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			delete(b.subs[key], s)
			if len(b.subs[key]) == 0 {
				delete(b.subs, key)
			}
		})
	}
}

// Publish hands ev to every subscriber of key without waiting: a
// subscriber whose buffer is full loses it.
func (b *Broker) Publish(key string, ev contract.Event) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[key] {
		select {
		case s.C <- ev:
		default:
		}
	}
}
