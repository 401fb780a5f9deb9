package client

import (
	"testing"
	"time"
)

func TestStepCells(t *testing.T) {
	took := Duration(1234567 * time.Microsecond)
	for _, tt := range []struct {
		name string
		step Step
		want Cells
	}{
		{"a local activity that ran", Step{Kind: "local_activity", Name: "BeginTurn", Detail: "model m1", Attempt: 2, Duration: &took, Outcome: "revision 3"},
			Cells{Step: "local_activity BeginTurn", Detail: "model m1", Attempt: "2", Took: "1.235s", Outcome: "revision 3"}},
		{"an update that failed", Step{Kind: "update", Name: "execute", Outcome: "failed", Error: "refused\nby the workflow"},
			Cells{Step: "update execute", Attempt: "-", Took: "-", Outcome: "failed: refused"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := StepCells(tt.step); got != tt.want {
				t.Errorf("cells %+v, want %+v", got, tt.want)
			}
		})
	}
}
