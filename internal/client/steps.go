package client

import (
	"fmt"
	"strings"
	"time"
)

// Cells are a step's cells after its time, as axlr-tui history prints
// them and the TUI's history view draws them. They may hold tabs and
// newlines (a prompt's text): each printer keeps them on its own line.
type Cells struct {
	// Step is the kind and the name: "activity ModelRequest".
	Step   string
	Detail string
	// Attempt is an activity's attempt, "-" when it has none.
	Attempt string
	// Took is how long the step ran, to the millisecond; "-" when unknown.
	Took string
	// Outcome is the outcome and, after a colon, the first line of the
	// error.
	Outcome string
}

// StepCells returns a step's cells.
func StepCells(s Step) Cells {
	c := Cells{Step: s.Kind + " " + s.Name, Detail: s.Detail, Attempt: "-", Took: "-", Outcome: s.Outcome}
	if s.Attempt > 0 {
		c.Attempt = fmt.Sprint(s.Attempt)
	}
	if s.Duration != nil {
		c.Took = time.Duration(*s.Duration).Round(time.Millisecond).String()
	}
	if s.Error != "" {
		first, _, _ := strings.Cut(s.Error, "\n")
		c.Outcome += ": " + first
	}
	return c
}
