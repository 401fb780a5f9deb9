package jsontest

import (
	"reflect"
	"testing"
)

func TestKeys(t *testing.T) {
	got := Keys(t, []byte(`{"b": 1, "a": {"y": null, "x": {"z": true}}, "c": [{"n": 1}], "d": null}`))
	want := []string{"a", "a.x", "a.x.z", "a.y", "b", "c", "c.n", "d"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}
