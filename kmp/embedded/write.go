package embedded

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/kmp"
)

// Write limits.
const (
	maxMemories     = 64
	maxSummaryBytes = 4096
	maxEvidenceByte = 16 << 10
	maxAboutBytes   = 256
)

var localID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// Write implements kmp.Store.
func (s *Store) Write(ctx context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	if err := validateWrite(req); err != nil {
		return kmp.WriteResult{}, err
	}
	digest := writeDigest(req)
	key := req.IdempotencyKey
	if key == "" {
		key = "write:" + digest[:16]
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return kmp.WriteResult{}, failed("begin the write", err)
	}
	defer tx.Rollback()
	var stored, storedResult string
	err = tx.QueryRowContext(ctx, `SELECT digest, result FROM writes WHERE idempotency_key = $1`, key).Scan(&stored, &storedResult)
	switch {
	case err == nil:
		if stored != digest {
			return kmp.WriteResult{}, kmp.Errorf(kmp.CodeConflict, "idempotency key '%s' was already accepted with different content", key)
		}
		var res kmp.WriteResult
		if err := json.Unmarshal([]byte(storedResult), &res); err != nil {
			return kmp.WriteResult{}, failed("read the outcome of "+key, err)
		}
		res.Status = kmp.StatusReplayed
		return res, nil
	case !errors.Is(err, sql.ErrNoRows):
		return kmp.WriteResult{}, failed("read the outcome of "+key, err)
	}
	// Ids are the store's own (no autoincrement, which differs by
	// database), taken inside the write's transaction.
	if _, err := tx.ExecContext(ctx, `INSERT INTO abouts (id, about) SELECT last.id + 1, $1 FROM (SELECT COALESCE(MAX(id), 0) AS id FROM abouts) last
		WHERE NOT EXISTS (SELECT 1 FROM abouts WHERE about = $1)`, req.About); err != nil {
		return kmp.WriteResult{}, failed("record about "+req.About, err)
	}
	aboutID, _, err := s.aboutID(ctx, tx, req.About)
	if err != nil {
		return kmp.WriteResult{}, err
	}
	w := &writer{s: s, tx: tx, ctx: ctx, about: aboutID, req: req, key: key}
	res, err := w.apply()
	if err != nil {
		return kmp.WriteResult{}, err
	}
	if req.Options != nil && req.Options.DryRun {
		res.Accepted, res.Status = false, kmp.StatusValidated
		return res, nil // the deferred rollback discards it
	}
	b, err := json.Marshal(res)
	if err != nil {
		return kmp.WriteResult{}, failed("encode the outcome", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO writes (idempotency_key, digest, result) VALUES ($1, $2, $3)`, key, digest, string(b)); err != nil {
		return kmp.WriteResult{}, failed("record the outcome of "+key, err)
	}
	if err := tx.Commit(); err != nil {
		return kmp.WriteResult{}, failed("commit the write", err)
	}
	return res, nil
}

// writer applies one write in its transaction.
type writer struct {
	s     *Store
	tx    *sql.Tx
	ctx   context.Context
	about int64
	req   kmp.WriteRequest
	key   string
	res   kmp.WriteResult
}

func (w *writer) apply() (kmp.WriteResult, error) {
	w.res = kmp.WriteResult{Accepted: true, Status: kmp.StatusCommitted, LocalRefs: map[string]string{},
		GeneratedRefs: []string{}, Relations: []kmp.RelationRef{}, Labels: kmp.LabelsWritten{Written: []string{}}}
	w.res.Receipt = kmp.Receipt{Ref: "kmp:receipt:" + hash(w.key)[:16], Action: "write_memory"}
	if len(w.req.Relations) > 0 {
		for i, r := range w.req.Relations {
			from, err := w.existing(r.From, fmt.Sprintf("relations[%d].from", i))
			if err != nil {
				return w.res, err
			}
			to, err := w.existing(r.To, fmt.Sprintf("relations[%d].to", i))
			if err != nil {
				return w.res, err
			}
			if err := w.relate(from, kmp.Link{Ref: to, Rel: r.Rel, Why: r.Why, Evidence: r.Evidence, Confidence: r.Confidence}, to); err != nil {
				return w.res, err
			}
		}
		w.res.Summary = fmt.Sprintf("related %d pairs of memories about %s", len(w.req.Relations), w.req.About)
		return w.res, nil
	}
	var seq int64
	if err := w.tx.QueryRowContext(w.ctx, `SELECT COALESCE(MAX(seq), 0) FROM entries`).Scan(&seq); err != nil {
		return w.res, failed("read the sequence", err)
	}
	observed := w.s.now().UTC().Format(time.RFC3339Nano)
	source := w.req.SourceKind
	if source == "" {
		source = "agent"
	}
	for _, m := range w.req.Memories {
		ref := "kmp:entry:" + hash(w.key + "\x00" + m.ID)[:16]
		seq++
		if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO entries (ref, about_id, seq, kind, summary, evidence, actor, source_kind, observed_at, write_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, ref, w.about, seq, m.Kind, m.Summary, m.Evidence, w.req.Actor, source, observed, w.key); err != nil {
			return w.res, failed("record memory "+m.ID, err)
		}
		if _, err := w.tx.ExecContext(w.ctx, w.s.d.index, ref, indexBody(w.about, m.Summary, m.Evidence)); err != nil {
			return w.res, failed("index memory "+m.ID, err)
		}
		for _, kv := range mergeLabels(w.req.Labels, m.Labels) {
			k, v, _ := strings.Cut(kv, "=")
			if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO labels (ref, key, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, ref, k, v); err != nil {
				return w.res, failed("label memory "+m.ID, err)
			}
			w.res.Labels.Written = appendOnce(w.res.Labels.Written, kv)
		}
		w.res.LocalRefs[m.ID] = ref
		w.res.GeneratedRefs = append(w.res.GeneratedRefs, ref)
	}
	for i, m := range w.req.Memories {
		for j, l := range m.ConnectTo {
			to, err := w.target(l.Ref, fmt.Sprintf("memories[%d].connect_to[%d].ref", i, j))
			if err != nil {
				return w.res, err
			}
			if err := w.relate(w.res.LocalRefs[m.ID], l, to); err != nil {
				return w.res, err
			}
		}
	}
	sort.Strings(w.res.Labels.Written)
	w.res.Summary = fmt.Sprintf("recorded %d memories about %s", len(w.req.Memories), w.req.About)
	return w.res, nil
}

// target resolves a connect_to ref: a local id (or @id) of this write, or
// an existing entry of the same about.
func (w *writer) target(ref, field string) (string, error) {
	if r, ok := w.res.LocalRefs[strings.TrimPrefix(ref, "@")]; ok {
		return r, nil
	}
	return w.existing(ref, field)
}

// existing checks that ref is an entry of the write's about.
func (w *writer) existing(ref, field string) (string, error) {
	var about int64
	err := w.tx.QueryRowContext(w.ctx, `SELECT about_id FROM entries WHERE ref = $1`, ref).Scan(&about)
	if errors.Is(err, sql.ErrNoRows) {
		return "", kmp.Errorf(kmp.CodeInvalid, "%s: unknown ref %q (neither a memory of this write nor an entry about %s)", field, ref, w.req.About)
	}
	if err != nil {
		return "", failed("read ref "+ref, err)
	}
	if about != w.about {
		return "", kmp.Errorf(kmp.CodeInvalid, "%s: ref %q is not about %s: abouts are never joined by relations", field, ref, w.req.About)
	}
	return ref, nil
}

func (w *writer) relate(from string, l kmp.Link, to string) error {
	conf := l.Confidence
	if conf == "" {
		conf = "unknown"
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO relations (from_ref, rel, to_ref, why, evidence, confidence) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (from_ref, rel, to_ref) DO NOTHING`, from, l.Rel, to, l.Why, l.Evidence, conf); err != nil {
		return failed("relate "+from+" to "+to, err)
	}
	w.res.Relations = append(w.res.Relations, kmp.RelationRef{From: from, Rel: l.Rel, To: to})
	return nil
}

// validateWrite refuses a write kmp-mcp would refuse, naming the field.
func validateWrite(req kmp.WriteRequest) error {
	bad := func(format string, args ...any) error { return kmp.Errorf(kmp.CodeInvalid, format, args...) }
	switch {
	case strings.TrimSpace(req.About) == "":
		return bad("about is required")
	case len(req.About) > maxAboutBytes:
		return bad("about is %d bytes: at most %d", len(req.About), maxAboutBytes)
	case strings.TrimSpace(req.Actor) == "":
		return bad("actor is required")
	case len(req.Memories) > 0 && len(req.Relations) > 0, len(req.Memories) == 0 && len(req.Relations) == 0:
		return bad("exactly one of memories and relations is required")
	case len(req.Memories) > maxMemories:
		return bad("memories holds %d: at most %d per write", len(req.Memories), maxMemories)
	}
	switch req.SourceKind {
	case "", "human", "agent", "projection", "derived":
	default:
		return bad("source_kind %q: one of human, agent, projection, derived", req.SourceKind)
	}
	if err := validateLabels("labels", req.Labels); err != nil {
		return err
	}
	strict := req.Options == nil || req.Options.Strict == nil || *req.Options.Strict
	ids := map[string]bool{}
	for i, m := range req.Memories {
		f := fmt.Sprintf("memories[%d]", i)
		switch {
		case !localID.MatchString(m.ID):
			return bad("%s.id %q: a local name matching ^[A-Za-z][A-Za-z0-9_-]*$", f, m.ID)
		case ids[m.ID]:
			return bad("%s.id %q is used twice", f, m.ID)
		case !kmp.KnownKind(m.Kind):
			return bad("%s.kind %q: one of %s", f, m.Kind, strings.Join(kmp.Kinds, ", "))
		case strings.TrimSpace(m.Summary) == "":
			return bad("%s.summary is required", f)
		case len(m.Summary) > maxSummaryBytes:
			return bad("%s.summary is %d bytes: at most %d", f, len(m.Summary), maxSummaryBytes)
		case strict && strings.TrimSpace(m.Evidence) == "":
			return bad("%s.evidence is required (or options.strict false)", f)
		case len(m.Evidence) > maxEvidenceByte:
			return bad("%s.evidence is %d bytes: at most %d", f, len(m.Evidence), maxEvidenceByte)
		}
		ids[m.ID] = true
		if err := validateLabels(f+".labels", m.Labels); err != nil {
			return err
		}
		for j, l := range m.ConnectTo {
			if err := validateLink(fmt.Sprintf("%s.connect_to[%d]", f, j), l.Ref, l.Rel, l.Why, l.Evidence, l.Confidence); err != nil {
				return err
			}
		}
	}
	for i, r := range req.Relations {
		f := fmt.Sprintf("relations[%d]", i)
		if strings.TrimSpace(r.From) == "" {
			return bad("%s.from is required", f)
		}
		if err := validateLink(f, r.To, r.Rel, r.Why, r.Evidence, r.Confidence); err != nil {
			return err
		}
	}
	return nil
}

func validateLink(f, ref, rel, why, evidence, confidence string) error {
	structural, ok := kmp.Relations[rel]
	switch {
	case strings.TrimSpace(ref) == "":
		return kmp.Errorf(kmp.CodeInvalid, "%s: ref is required", f)
	case !ok:
		return kmp.Errorf(kmp.CodeInvalid, "%s.rel %q is not a relation name", f, rel)
	case !structural && (strings.TrimSpace(why) == "" || strings.TrimSpace(evidence) == ""):
		return kmp.Errorf(kmp.CodeInvalid, "%s: rel %s needs why and evidence", f, rel)
	}
	switch confidence {
	case "", "high", "medium", "low", "unknown":
		return nil
	}
	return kmp.Errorf(kmp.CodeInvalid, "%s.confidence %q: one of high, medium, low, unknown", f, confidence)
}

func validateLabels(f string, labels map[string][]string) error {
	for k, vs := range labels {
		if strings.TrimSpace(k) == "" || strings.Contains(k, "=") {
			return kmp.Errorf(kmp.CodeInvalid, "%s: key %q must be non-empty and hold no '='", f, k)
		}
		seen := map[string]bool{}
		for _, v := range vs {
			if strings.TrimSpace(v) == "" || seen[v] {
				return kmp.Errorf(kmp.CodeInvalid, "%s.%s: values must be unique and non-empty", f, k)
			}
			seen[v] = true
		}
	}
	return nil
}

// mergeLabels returns a write's labels and a memory's as sorted key=value.
func mergeLabels(top, own map[string][]string) []string {
	var out []string
	for _, m := range []map[string][]string{top, own} {
		for k, vs := range m {
			for _, v := range vs {
				out = appendOnce(out, k+"="+v)
			}
		}
	}
	sort.Strings(out)
	return out
}

func appendOnce(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// writeDigest is the write's logical content: everything but its key and
// options.
func writeDigest(req kmp.WriteRequest) string {
	req.IdempotencyKey, req.Options = "", nil
	b, _ := json.Marshal(req) // maps marshal in key order
	return hash(string(b))
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
