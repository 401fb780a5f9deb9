package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/underpass-ai/axlr/kmp"
)

// Wake ranking.
const (
	searchLimit   = 100 // matches read
	recentLimit   = 50  // newest entries read
	relatedOf     = 20  // best matches whose neighbours are read
	maxTerms      = 24
	maxLineBytes  = 480
	maxBecause    = 200
	weightMatch   = 3.0
	weightRecent  = 1.0
	weightRelated = 1.5
)

// entry is a row of entries.
type entry struct {
	ref, kind, summary, evidence, actor, source, observed string
	seq                                                   int64
	about                                                 string
}

// Wake implements kmp.Store. It ranks the about's entries by the intent's
// terms (the search's score), by recency, and by relation to the best
// matches, and fills the wake's sections in that order within max_bytes:
// error paths are the causal spine, constraints, preferences and
// feedback the guardrails, everything else the current state.
func (s *Store) Wake(ctx context.Context, req kmp.WakeRequest) (kmp.WakeResult, error) {
	maxBytes, err := budgetBytes(req.Budget)
	if err != nil {
		return kmp.WakeResult{}, err
	}
	aboutID, err := s.populated(ctx, req.About)
	if err != nil {
		return kmp.WakeResult{}, err
	}
	terms := Terms(req.Intent)
	scores := map[string]float64{}
	matched := map[string]bool{}
	rows := map[string]entry{}
	var best []string
	if len(terms) > 0 {
		hits, err := s.search(ctx, aboutID, terms, searchLimit)
		if err != nil {
			return kmp.WakeResult{}, err
		}
		top := 0.0
		for _, h := range hits {
			top = max(top, h.score)
		}
		for i, h := range hits {
			rows[h.ref], matched[h.ref] = h.entry, true
			if i < relatedOf {
				best = append(best, h.ref)
			}
			if top > 0 {
				scores[h.ref] += weightMatch * h.score / top
			} else {
				scores[h.ref] += weightMatch
			}
		}
	}
	recent, err := s.query(ctx, `SELECT `+entryColumns+` FROM entries WHERE about_id = $1 ORDER BY seq DESC LIMIT $2`, aboutID, recentLimit)
	if err != nil {
		return kmp.WakeResult{}, err
	}
	for i, e := range recent {
		rows[e.ref] = e
		scores[e.ref] += weightRecent * float64(len(recent)-i) / float64(len(recent))
	}
	if len(best) > 0 {
		related, err := s.neighbours(ctx, best)
		if err != nil {
			return kmp.WakeResult{}, err
		}
		var missing []string
		for _, ref := range related {
			if matched[ref] {
				continue
			}
			scores[ref] += weightRelated
			if _, ok := rows[ref]; !ok {
				missing = append(missing, ref)
			}
		}
		more, err := s.entries(ctx, aboutID, missing)
		if err != nil {
			return kmp.WakeResult{}, err
		}
		for _, e := range more {
			rows[e.ref] = e
		}
	}
	entries := make([]entry, 0, len(rows))
	for _, e := range rows {
		entries = append(entries, e)
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := scores[entries[i].ref], scores[entries[j].ref]
		if a != b {
			return a > b
		}
		return entries[i].seq > entries[j].seq
	})
	res := kmp.WakeResult{Wake: kmp.Wake{Objective: req.Intent, CurrentState: []string{}, CausalSpine: []kmp.Cause{},
		OpenLoops: []string{}, NextActions: []string{}, Guardrails: []string{}}}
	used, returned := 0, 0
	limit := 0
	if req.Budget != nil {
		limit = req.Budget.MaxEntries
	}
	termSeen := map[string]bool{}
	for _, e := range entries {
		if limit > 0 && returned == limit {
			break
		}
		claim := oneLine(e.summary, maxLineBytes)
		var line string
		var cause *kmp.Cause
		if e.kind == kmp.KindErrorPath {
			cause = &kmp.Cause{Claim: claim, Because: oneLine(e.evidence, maxBecause), EvidenceRef: e.ref}
			line = kmp.Wake{CausalSpine: []kmp.Cause{*cause}}.Lines()[0]
		} else {
			line = e.ref + " " + e.kind + ": " + claim
		}
		if used+len(line)+1 > maxBytes {
			continue // a shorter one may still fit
		}
		used += len(line) + 1
		returned++
		switch {
		case cause != nil:
			res.Wake.CausalSpine = append(res.Wake.CausalSpine, *cause)
		case e.kind == kmp.KindConstraint || e.kind == kmp.KindPreference || e.kind == kmp.KindFeedback:
			res.Wake.Guardrails = append(res.Wake.Guardrails, line)
		default:
			res.Wake.CurrentState = append(res.Wake.CurrentState, line)
		}
		if matched[e.ref] {
			res.Proof.Evidence = append(res.Proof.Evidence, e.ref)
			text := strings.ToLower(e.summary + " " + e.evidence)
			for _, t := range terms {
				if !termSeen[t] && strings.Contains(text, t) {
					termSeen[t] = true
					res.Proof.MatchedTerms = append(res.Proof.MatchedTerms, t)
				}
			}
		}
	}
	res.Proof.Confidence = "low"
	if len(res.Proof.Evidence) > 0 {
		res.Proof.Confidence = "medium"
	}
	res.Projection = kmp.Projection{Contract: "wake", Budget: kmp.ProjectionBudget{MaxBytes: maxBytes, UsedBytes: used},
		Page: kmp.Page{Returned: returned, Total: len(entries), HasMore: returned < len(entries)}}
	res.Summary = fmt.Sprintf("%d of %d memories about %s", returned, len(entries), req.About)
	if req.Intent != "" {
		res.Summary += " for: " + oneLine(req.Intent, 120)
	}
	return res, nil
}

func budgetBytes(b *kmp.Budget) (int, error) {
	if b == nil || b.MaxBytes == 0 {
		return kmp.DefaultBudgetBytes, nil
	}
	if b.MaxBytes < kmp.MinBudgetBytes {
		return 0, kmp.Errorf(kmp.CodeInvalid, "budget.max_bytes is %d: at least %d", b.MaxBytes, kmp.MinBudgetBytes)
	}
	if b.MaxEntries < 0 {
		return 0, kmp.Errorf(kmp.CodeInvalid, "budget.max_entries is %d: at least 0", b.MaxEntries)
	}
	return b.MaxBytes, nil
}

// Terms returns the search terms of a text: its words of three characters
// or more, lowercased, without common words, each once, at most 24.
func Terms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range words(text) {
		if len([]rune(w)) < 3 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == maxTerms {
			break
		}
	}
	return out
}

// words splits text into lowercase words of letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

var stopwords = wordSet(`the and for with that this from into when what why how are was were has have had not but
		its it's our your their them they you any all can will would should could does did done then than also only
		out about after before again there here which while where who whom been being each other some such very`)

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// hit is an entry a search matched, with its score (higher is better).
type hit struct {
	entry
	score float64
}

// entryColumns are the columns query scans, in its order.
const entryColumns = `ref, kind, summary, evidence, actor, source_kind, observed_at, seq`

// search returns an about's entries matching terms, best first.
func (s *Store) search(ctx context.Context, aboutID int64, terms []string, limit int) ([]hit, error) {
	rows, err := s.db.QueryContext(ctx, s.d.search, s.d.match(aboutID, terms), limit)
	if err != nil {
		return nil, failed("search the memory", err)
	}
	defer rows.Close()
	var out []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.ref, &h.kind, &h.summary, &h.evidence, &h.actor, &h.source, &h.observed, &h.seq, &h.score); err != nil {
			return nil, failed("search the memory", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, failed("search the memory", err)
	}
	return out, nil
}

// query reads entries (entryColumns, in order).
func (s *Store) query(ctx context.Context, q string, args ...any) ([]entry, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, failed("read entries", err)
	}
	defer rows.Close()
	var out []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.ref, &e.kind, &e.summary, &e.evidence, &e.actor, &e.source, &e.observed, &e.seq); err != nil {
			return nil, failed("read entries", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, failed("read entries", err)
	}
	return out, nil
}

func (s *Store) refs(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, failed("read entries", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, failed("read entries", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, failed("read entries", err)
	}
	return out, nil
}

// neighbours returns the entries related to refs, either way.
func (s *Store) neighbours(ctx context.Context, refs []string) ([]string, error) {
	in, args := placeholders(refs, 1)
	return s.refs(ctx, `SELECT to_ref FROM relations WHERE from_ref IN (`+in+`) UNION SELECT from_ref FROM relations WHERE to_ref IN (`+in+`)`, args...)
}

// entries reads the rows of refs that are about aboutID.
func (s *Store) entries(ctx context.Context, aboutID int64, refs []string) ([]entry, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	in, args := placeholders(refs, 2)
	return s.query(ctx, `SELECT `+entryColumns+` FROM entries WHERE about_id = $1 AND ref IN (`+in+`)`, append([]any{aboutID}, args...)...)
}

// placeholders returns "$n, $n+1, …" for xs and xs as arguments.
func placeholders(xs []string, from int) (string, []any) {
	ph := make([]string, len(xs))
	args := make([]any, len(xs))
	for i, x := range xs {
		ph[i] = fmt.Sprintf("$%d", from+i)
		args[i] = x
	}
	return strings.Join(ph, ", "), args
}

// Ask implements kmp.Store: the best match's summary is the answer, with
// the three best matches as what it rests on; no match is UNKNOWN.
func (s *Store) Ask(ctx context.Context, req kmp.AskRequest) (kmp.AskResult, error) {
	if strings.TrimSpace(req.Question) == "" {
		return kmp.AskResult{}, kmp.Errorf(kmp.CodeInvalid, "question is required")
	}
	if _, err := budgetBytes(req.Budget); err != nil {
		return kmp.AskResult{}, err
	}
	aboutID, err := s.populated(ctx, req.About)
	if err != nil {
		return kmp.AskResult{}, err
	}
	res := kmp.AskResult{Answer: kmp.Unknown, Because: []kmp.Because{}}
	terms := Terms(req.Question)
	var entries []hit
	if len(terms) > 0 {
		if entries, err = s.search(ctx, aboutID, terms, 3); err != nil {
			return kmp.AskResult{}, err
		}
	}
	for _, e := range entries {
		res.Because = append(res.Because, kmp.Because{Claim: e.summary, Ref: e.ref, Evidence: oneLine(e.evidence, maxBecause)})
	}
	if len(entries) > 0 {
		res.Answer = entries[0].summary
		res.Summary = fmt.Sprintf("answered from %d memories about %s", len(entries), req.About)
	} else {
		res.Summary = "no memory about " + req.About + " answers it"
	}
	return res, nil
}

// Inspect implements kmp.Store.
func (s *Store) Inspect(ctx context.Context, req kmp.InspectRequest) (kmp.InspectResult, error) {
	if strings.TrimSpace(req.Ref) == "" {
		return kmp.InspectResult{}, kmp.Errorf(kmp.CodeInvalid, "ref is required")
	}
	var e entry
	err := s.db.QueryRowContext(ctx, `SELECT e.ref, e.kind, e.summary, e.evidence, e.actor, e.source_kind, e.observed_at, e.seq, a.about
		FROM entries e JOIN abouts a ON a.id = e.about_id WHERE e.ref = $1`, req.Ref).
		Scan(&e.ref, &e.kind, &e.summary, &e.evidence, &e.actor, &e.source, &e.observed, &e.seq, &e.about)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && req.About != "" && req.About != e.about) {
		where := ""
		if req.About != "" {
			where = " about " + req.About
		}
		return kmp.InspectResult{}, kmp.Errorf(kmp.CodeNotFound, "no entry %s%s", req.Ref, where)
	}
	if err != nil {
		return kmp.InspectResult{}, failed("read "+req.Ref, err)
	}
	obj, err := s.object(ctx, e)
	if err != nil {
		return kmp.InspectResult{}, err
	}
	res := kmp.InspectResult{Object: obj, Evidence: []string{}, Links: kmp.Links{Incoming: []kmp.LinkedRef{}, Outgoing: []kmp.LinkedRef{}}}
	if e.evidence != "" {
		res.Evidence = append(res.Evidence, e.evidence)
	}
	for _, dir := range []struct {
		query string
		into  *[]kmp.LinkedRef
	}{
		{`SELECT to_ref, rel, why FROM relations WHERE from_ref = $1 ORDER BY rel, to_ref`, &res.Links.Outgoing},
		{`SELECT from_ref, rel, why FROM relations WHERE to_ref = $1 ORDER BY rel, from_ref`, &res.Links.Incoming},
	} {
		rows, err := s.db.QueryContext(ctx, dir.query, e.ref)
		if err != nil {
			return kmp.InspectResult{}, failed("read the links of "+e.ref, err)
		}
		for rows.Next() {
			var l kmp.LinkedRef
			if err := rows.Scan(&l.Ref, &l.Rel, &l.Why); err != nil {
				rows.Close()
				return kmp.InspectResult{}, failed("read the links of "+e.ref, err)
			}
			*dir.into = append(*dir.into, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return kmp.InspectResult{}, failed("read the links of "+e.ref, err)
		}
	}
	res.Summary = fmt.Sprintf("%s %s about %s", e.kind, e.ref, e.about)
	return res, nil
}

// object is an entry as kmp.Object, with its labels.
func (s *Store) object(ctx context.Context, e entry) (kmp.Object, error) {
	labels := map[string][]string{}
	rows, err := s.db.QueryContext(ctx, `SELECT key, value FROM labels WHERE ref = $1 ORDER BY key, value`, e.ref)
	if err != nil {
		return kmp.Object{}, failed("read the labels of "+e.ref, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return kmp.Object{}, failed("read the labels of "+e.ref, err)
		}
		labels[k] = append(labels[k], v)
	}
	if err := rows.Err(); err != nil {
		return kmp.Object{}, failed("read the labels of "+e.ref, err)
	}
	md := map[string]any{"about": e.about, "actor": e.actor, "source_kind": e.source,
		"observed_at": e.observed, "sequence": e.seq, "evidence": e.evidence}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	return kmp.Object{Ref: e.ref, Kind: e.kind, Text: e.summary, Metadata: md}, nil
}

// List implements kmp.Store.
func (s *Store) List(ctx context.Context, req kmp.ListRequest) (kmp.ListResult, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = kmp.DefaultListLimit
	case limit < 0 || limit > kmp.MaxListLimit:
		return kmp.ListResult{}, kmp.Errorf(kmp.CodeInvalid, "limit is %d: between 1 and %d", req.Limit, kmp.MaxListLimit)
	}
	if req.Kind != "" && !kmp.KnownKind(req.Kind) {
		return kmp.ListResult{}, kmp.Errorf(kmp.CodeInvalid, "kind %q: one of %s", req.Kind, strings.Join(kmp.Kinds, ", "))
	}
	aboutID, err := s.populated(ctx, req.About)
	if err != nil {
		return kmp.ListResult{}, err
	}
	where, args := `about_id = $1`, []any{aboutID}
	if req.Kind != "" {
		where, args = where+` AND kind = $2`, append(args, req.Kind)
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM entries WHERE `+where, args...).Scan(&total); err != nil {
		return kmp.ListResult{}, failed("count the entries of "+req.About, err)
	}
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(`SELECT ref, kind, summary, evidence, actor, source_kind, observed_at, seq FROM entries
		WHERE %s ORDER BY seq DESC LIMIT $%d`, where, len(args)+1), append(args, limit)...)
	if err != nil {
		return kmp.ListResult{}, failed("list "+req.About, err)
	}
	var es []entry
	for rows.Next() {
		e := entry{about: req.About}
		if err := rows.Scan(&e.ref, &e.kind, &e.summary, &e.evidence, &e.actor, &e.source, &e.observed, &e.seq); err != nil {
			rows.Close()
			return kmp.ListResult{}, failed("list "+req.About, err)
		}
		es = append(es, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return kmp.ListResult{}, failed("list "+req.About, err)
	}
	res := kmp.ListResult{Entries: []kmp.Object{}}
	for _, e := range es {
		obj, err := s.object(ctx, e)
		if err != nil {
			return kmp.ListResult{}, err
		}
		res.Entries = append(res.Entries, obj)
	}
	res.Page = kmp.Page{Returned: len(res.Entries), Total: total, HasMore: len(res.Entries) < total}
	return res, nil
}

// oneLine flattens s to one line of at most n bytes (cut on a rune).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
