package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/session"
)

// endAbandoned ends, as abandoned, the open session records whose
// session has had no event for longer than after: a turn left claimed is
// completed as interrupted with the reason, then abandoned is applied.
// A record it cannot end is logged and left as it is.
func endAbandoned(ctx context.Context, e made.Engine, store *session.Store, after time.Duration, now time.Time, log zerolog.Logger) {
	list, err := e.List(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("abandoned sessions not looked for: MADE did not list its instances")
		return
	}
	for _, le := range list {
		in := le.Instance
		if in == nil || in.DefinitionName != ceremonies.SessionRecord || in.Completed {
			continue
		}
		id, _ := in.Context["session"].(string)
		idle, err := idleSince(store, id, now)
		if err != nil || idle < after {
			continue
		}
		reason := fmt.Sprintf("abandoned: session %s had no prompt for %s (daemon.abandon_hours)", id, idle.Round(time.Minute))
		if err := abandon(ctx, e, in, reason); err != nil {
			log.Warn().Str("instance", in.CeremonyID).Err(err).Msg("an abandoned session's record was not ended")
			continue
		}
		log.Info().Str("instance", in.CeremonyID).Str("reason", reason).Msg("session record ended as abandoned")
	}
}

// idleSince is how long a session's log has had no event.
func idleSince(store *session.Store, id string, now time.Time) (time.Duration, error) {
	l, err := store.Log(id)
	if err != nil {
		return 0, err
	}
	events := l.Events(max(l.Len()-1, 0))
	if len(events) == 0 {
		return 0, errors.New("empty log")
	}
	return now.Sub(events[len(events)-1].Time), nil
}

func abandon(ctx context.Context, e made.Engine, in *made.Instance, reason string) error {
	if st, ok := in.Step(ceremonies.SessionTurnStep); ok && st.Status == made.StepInProgress {
		if _, err := e.Complete(ctx, made.CompleteRequest{CeremonyID: in.CeremonyID, StepID: ceremonies.SessionTurnStep, ActorKind: made.ActorService,
			Status: made.StepCompleted, Output: map[string]any{"interrupted": true, "status": "interrupted", "summary": reason}}); err != nil {
			return err
		}
	}
	_, err := e.ApplyTransition(ctx, made.TransitionRequest{CeremonyID: in.CeremonyID, Trigger: ceremonies.SessionAbandoned, ActorKind: made.ActorService})
	return err
}
