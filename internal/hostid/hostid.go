// Package hostid names this machine for axlr's task queues. A workflow bound
// to a workspace runs on axlr-host-<host id>, so axlrd and axlr-tui on the
// same machine must agree on the id without talking to each other.
package hostid

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// EnvVar overrides the host id.
const EnvVar = "AXLR_HOST_ID"

var valid = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Get returns the host id: $AXLR_HOST_ID when set, else a digest of
// /etc/machine-id, else the host name.
func Get(getenv func(string) string) (string, error) {
	if id := getenv(EnvVar); id != "" {
		if !valid.MatchString(id) {
			return "", fmt.Errorf("%s=%q: use 1 to 63 lowercase letters, digits, '.', '_' or '-'", EnvVar, id)
		}
		return id, nil
	}
	for _, path := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(path); err == nil {
			if id := strings.TrimSpace(string(b)); id != "" {
				sum := sha256.Sum256([]byte("axlr-host:" + id))
				return hex.EncodeToString(sum[:6]), nil
			}
		}
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "", errors.Join(errors.New("no host id: set "+EnvVar), err)
	}
	name = strings.ToLower(name)
	if !valid.MatchString(name) {
		sum := sha256.Sum256([]byte("axlr-host:" + name))
		return hex.EncodeToString(sum[:6]), nil
	}
	return name, nil
}
