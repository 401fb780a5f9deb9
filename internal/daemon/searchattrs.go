package daemon

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/workflows"
)

// searchAttributes are the search attributes axlr's workflows upsert:
// the sessions a session workflow holds; a job's id, kind, repository,
// pull request, status and host; a plan's id and status, and its task workers'
// plan, task and wave.
var searchAttributes = map[string]enumspb.IndexedValueType{
	workflows.SearchAttributeSessions:    enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
	workflows.SearchAttributeJob:         enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributeJobKind:     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributeRepository:  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePullRequest: enumspb.INDEXED_VALUE_TYPE_INT,
	workflows.SearchAttributeJobStatus:   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributeHost:        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePlan:        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePlanTask:    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePlanWave:    enumspb.INDEXED_VALUE_TYPE_INT,
	workflows.SearchAttributePlanStatus:  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// ensureSearchAttributes registers on the namespace those of
// searchAttributes it misses: the workflows upsert them, and an unknown
// attribute would fail their workflow tasks. One registered with another
// type is an error.
func ensureSearchAttributes(ctx context.Context, c client.Client, namespace string, settle time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	var names, create []string
	for _, name := range slices.Sorted(maps.Keys(searchAttributes)) {
		want := searchAttributes[name]
		if t, ok := list.GetCustomAttributes()[name]; ok {
			if t != want {
				return fmt.Errorf("search attribute %s of namespace %s is %s, not %s", name, namespace, t, want)
			}
			continue
		}
		missing[name] = want
		names = append(names, fmt.Sprintf("%s (%s)", name, want))
		create = append(create, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type %s", namespace, name, want))
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	}); err != nil {
		return fmt.Errorf("register search attributes %s on namespace %s: %w; an operator can add them with: %s",
			strings.Join(names, ", "), namespace, err, strings.Join(create, "; "))
	}
	// A cluster's services learn a namespace's new attributes when they
	// next refresh their namespace cache (system.namespaceCacheRefreshInterval,
	// 2 s by default); a workflow upserting one before fails its task, and
	// an update waiting on that task fails with it. axlrd is not ready
	// before they know them: it waits settle.
	select {
	case <-ctx.Done():
		return fmt.Errorf("register search attributes on namespace %s: %w", namespace, ctx.Err())
	case <-time.After(settle):
	}
	return nil
}

// searchAttributesSettle is how long axlrd on a cluster waits after
// registering search attributes: two of the server's default namespace
// cache refreshes.
const searchAttributesSettle = 4 * time.Second
