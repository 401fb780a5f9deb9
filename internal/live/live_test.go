package live

import (
	"testing"

	"github.com/underpass-ai/axlr/contract"
)

func TestBroker(t *testing.T) {
	var b Broker
	a, cancelA := b.Subscribe("wf-1", 2)
	other, cancelOther := b.Subscribe("wf-2", 2)
	defer cancelOther()
	for _, text := range []string{"a", "b", "c"} {
		b.Publish("wf-1", contract.Event{Type: contract.EventTextDelta, Text: text})
	}
	if got := (<-a.C).Text + (<-a.C).Text; got != "ab" {
		t.Fatalf("got %q: want the first two, in order", got)
	}
	select {
	case ev := <-a.C:
		t.Fatalf("a full buffer kept %q", ev.Text)
	default:
	}
	if len(other.C) != 0 {
		t.Fatal("another key's subscriber got an event")
	}
	cancelA()
	cancelA()
	b.Publish("wf-1", contract.Event{Type: contract.EventTextDelta, Text: "d"})
	if len(a.C) != 0 {
		t.Fatal("a cancelled subscription got an event")
	}
	var none *Broker
	none.Publish("wf-1", contract.Event{})
}
