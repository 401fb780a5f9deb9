package embedded

import (
	"context"
	"sync"
)

// backend is where the engine keeps published definitions and instances:
// a directory one process owns (fileBackend), or a PostgreSQL database the
// hosts of a cluster share (sqlBackend). Every change to an instance is a
// compare-and-swap on its revision, so two processes driving one instance
// never both apply a verb to the same revision: the loser reads the
// instance again and applies its verb to what the winner left.
type backend interface {
	// definitions returns every published definition.
	definitions(ctx context.Context) ([]storedDefinition, error)
	// definition returns the definition published as name@version; ok is
	// false when there is none.
	definition(ctx context.Context, name, version string) (d storedDefinition, ok bool, err error)
	// addDefinition stores d unless name@version is published already,
	// and returns what is stored under it then.
	addDefinition(ctx context.Context, d storedDefinition) (storedDefinition, error)
	// instance returns an instance's JSON and revision; ok is false when
	// there is none.
	instance(ctx context.Context, id string) (b []byte, rev int64, ok bool, err error)
	// instances returns every instance's JSON by id.
	instances(ctx context.Context) (map[string][]byte, error)
	// create stores a new instance at revision 1; created is false when
	// the id is taken.
	create(ctx context.Context, id string, b []byte) (created bool, err error)
	// swap replaces the instance at revision rev with b, at rev+1;
	// swapped is false when its revision is no longer rev.
	swap(ctx context.Context, id string, b []byte, rev int64) (swapped bool, err error)
}

// fileBackend is the single-host store: the directory (store) holds the
// truth, and memory a copy of it read at open, with each instance's
// revision counted from there (one process owns the directory).
type fileBackend struct {
	mu    sync.Mutex
	store *store
	defs  map[string]storedDefinition
	insts map[string]fileInstance
}

type fileInstance struct {
	b   []byte
	rev int64
}

func openFileBackend(dir string) (*fileBackend, error) {
	st, err := openStore(dir)
	if err != nil {
		return nil, err
	}
	defs, err := st.readDefinitions()
	if err != nil {
		return nil, err
	}
	insts, err := st.readInstances()
	if err != nil {
		return nil, err
	}
	f := &fileBackend{store: st, defs: map[string]storedDefinition{}, insts: map[string]fileInstance{}}
	for _, d := range defs {
		f.defs[publishedKey(d.Name, d.Version)] = d
	}
	for id, b := range insts {
		f.insts[id] = fileInstance{b: b, rev: 1}
	}
	return f, nil
}

func (f *fileBackend) definitions(context.Context) ([]storedDefinition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]storedDefinition, 0, len(f.defs))
	for _, d := range f.defs {
		out = append(out, d)
	}
	return out, nil
}

func (f *fileBackend) definition(_ context.Context, name, version string) (storedDefinition, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.defs[publishedKey(name, version)]
	return d, ok, nil
}

func (f *fileBackend) addDefinition(_ context.Context, d storedDefinition) (storedDefinition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := publishedKey(d.Name, d.Version)
	if had, ok := f.defs[key]; ok {
		return had, nil
	}
	if err := f.store.writeDefinition(d); err != nil {
		return storedDefinition{}, err
	}
	f.defs[key] = d
	return d, nil
}

func (f *fileBackend) instance(_ context.Context, id string) ([]byte, int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.insts[id]
	return in.b, in.rev, ok, nil
}

func (f *fileBackend) instances(context.Context) (map[string][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]byte, len(f.insts))
	for id, in := range f.insts {
		out[id] = in.b
	}
	return out, nil
}

func (f *fileBackend) create(_ context.Context, id string, b []byte) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.insts[id]; ok {
		return false, nil
	}
	if err := f.store.writeInstance(id, b); err != nil {
		return false, err
	}
	f.insts[id] = fileInstance{b: b, rev: 1}
	return true, nil
}

func (f *fileBackend) swap(_ context.Context, id string, b []byte, rev int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in, ok := f.insts[id]; !ok || in.rev != rev {
		return false, nil
	}
	if err := f.store.writeInstance(id, b); err != nil {
		return false, err
	}
	f.insts[id] = fileInstance{b: b, rev: rev + 1}
	return true, nil
}
