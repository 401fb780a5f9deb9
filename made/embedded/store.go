package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// store keeps the embedded engine's state in a directory:
//
//	definitions/<name>@<version>.json   {"name","version","digest","yaml"}
//	instances/<sha256 of the id>.json   one instance each
//
// Every write goes to a temporary file in the same directory, is synced,
// renamed over the old file, and the directory is synced, so a crash
// leaves either the old or the new content.
type store struct {
	dir string
}

const (
	definitionsDir = "definitions"
	instancesDir   = "instances"
	tempPrefix     = ".tmp-"
)

// storedDefinition is a published definition as written to disk.
type storedDefinition struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	YAML    string `json:"yaml"`
}

func openStore(dir string) (*store, error) {
	for _, d := range []string{dir, filepath.Join(dir, definitionsDir), filepath.Join(dir, instancesDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create ceremony store directory %s: %w", d, err)
		}
	}
	return &store{dir: dir}, nil
}

func (s *store) definitionPath(name, version string) string {
	return filepath.Join(s.dir, definitionsDir, name+"@"+version+".json")
}

func (s *store) instancePath(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(s.dir, instancesDir, hex.EncodeToString(sum[:])+".json")
}

func (s *store) writeDefinition(d storedDefinition) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode definition %s %s: %w", d.Name, d.Version, err)
	}
	return writeAtomic(s.definitionPath(d.Name, d.Version), b)
}

func (s *store) writeInstance(id string, b []byte) error {
	return writeAtomic(s.instancePath(id), b)
}

// readDefinitions returns every stored definition.
func (s *store) readDefinitions() ([]storedDefinition, error) {
	var out []storedDefinition
	err := s.each(definitionsDir, func(path string, b []byte) error {
		var d storedDefinition
		if err := json.Unmarshal(b, &d); err != nil {
			return fmt.Errorf("read definition %s: %w", path, err)
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// readInstances returns every stored instance's bytes by ceremony id.
func (s *store) readInstances() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.each(instancesDir, func(path string, b []byte) error {
		var head struct {
			ID string `json:"ceremony_id"`
		}
		if err := json.Unmarshal(b, &head); err != nil || head.ID == "" || s.instancePath(head.ID) != path {
			return fmt.Errorf("read instance %s: not a ceremony instance of this store", path)
		}
		out[head.ID] = b
		return nil
	})
	return out, err
}

// each reads every file of a store directory, removing the temporary
// files an interrupted write left behind.
func (s *store) each(sub string, fn func(path string, b []byte) error) error {
	dir := filepath.Join(s.dir, sub)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read ceremony store directory %s: %w", dir, err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove interrupted write %s: %w", path, err)
			}
			continue
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if err := fn(path, b); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic replaces path with data durably.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	if err := writeSynced(f, data); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func writeSynced(f *os.File, data []byte) error {
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	if cerr := d.Close(); serr == nil {
		serr = cerr
	}
	return serr
}
