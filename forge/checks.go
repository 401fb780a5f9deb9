package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/underpass-ai/axlr/forge/pull"
)

// Checks reads the check runs (the latest of each name) and the combined
// commit status of sha in repo, and classifies them. A check run or a
// combined status that names another SHA is counted in Ignored, not
// classified.
func (g *GitHub) Checks(ctx context.Context, repo, sha string) (pull.Checks, error) {
	op := fmt.Sprintf("read the checks of %s in %s", sha, repo)
	rp, err := repoPath(repo)
	if err == nil {
		err = checkSHA(sha)
	}
	if err != nil {
		return pull.Checks{}, refuse(op, err)
	}
	c := pull.Checks{SHA: sha}

	type checkRun struct {
		ID         int64  `json:"id"`
		Name       string `json:"name"`
		Status     string `json:"status"`
		Conclusion string `json:"conclusion"`
		HeadSHA    string `json:"head_sha"`
		HTMLURL    string `json:"html_url"`
		DetailsURL string `json:"details_url"`
		App        struct {
			ID int64 `json:"id"`
		} `json:"app"`
	}
	type runPage struct {
		TotalCount int        `json:"total_count"`
		CheckRuns  []checkRun `json:"check_runs"`
	}
	runPages, err := readPages(ctx, g, rp+"/commits/"+sha+"/check-runs", url.Values{"filter": {"latest"}}, "check runs",
		func(p *runPage) (int, int) { return len(p.CheckRuns), p.TotalCount })
	// A GitHub-compatible forge without the checks API (only commit
	// statuses) answers 404: its statuses are the checks.
	if err != nil {
		if e := g.fail(op, err); !errors.Is(e, pull.ErrNotFound) || len(runPages) > 0 {
			return pull.Checks{}, e
		}
	}
	var runs []checkRun
	for _, p := range runPages {
		for _, r := range p.CheckRuns {
			if !strings.EqualFold(r.HeadSHA, sha) {
				c.Ignored++
				continue
			}
			runs = append(runs, r)
		}
	}
	// GitHub's filter=latest leaves one run of a name per app; a forge
	// that ignores it lists a rerun beside the run it replaces.
	runs = latest(runs, func(r checkRun) (string, int64) { return r.Name + "\x00" + strconv.FormatInt(r.App.ID, 10), r.ID })
	for _, r := range runs {
		link := r.HTMLURL
		if link == "" {
			link = r.DetailsURL
		}
		c.Add(r.Name, r.Status, r.Conclusion, link)
	}

	type status struct {
		ID        int64  `json:"id"`
		State     string `json:"state"`
		Context   string `json:"context"`
		TargetURL string `json:"target_url"`
	}
	type statusPage struct {
		SHA        string   `json:"sha"`
		TotalCount int      `json:"total_count"`
		Statuses   []status `json:"statuses"`
	}
	statusPages, err := readPages(ctx, g, rp+"/commits/"+sha+"/status", nil, "commit statuses",
		func(p *statusPage) (int, int) { return len(p.Statuses), p.TotalCount })
	// A forge without combined statuses: the check runs are all.
	if err != nil {
		if e := g.fail(op, err); !errors.Is(e, pull.ErrNotFound) || len(statusPages) > 0 {
			return pull.Checks{}, e
		}
	}
	var statuses []status
	for _, p := range statusPages {
		if !strings.EqualFold(p.SHA, sha) {
			c.Ignored += len(p.Statuses)
			continue
		}
		statuses = append(statuses, p.Statuses...)
	}
	// The combined status holds the latest status of each context; a
	// forge that lists every status it was sent holds older ones too.
	statuses = latest(statuses, func(s status) (string, int64) { return s.Context, s.ID })
	for _, s := range statuses {
		c.Add(s.Context, "", s.State, s.TargetURL)
	}
	return c, nil
}

// latest keeps one item of each key, the one of the greatest id (the first
// listed of equal ids: lists come newest first), in the order the keys
// first appear.
func latest[T any](items []T, key func(T) (string, int64)) []T {
	at := map[string]int{}
	var out []T
	var ids []int64
	for _, it := range items {
		k, id := key(it)
		i, seen := at[k]
		switch {
		case !seen:
			at[k] = len(out)
			out, ids = append(out, it), append(ids, id)
		case id > ids[i]:
			out[i], ids[i] = it, id
		}
	}
	return out
}
