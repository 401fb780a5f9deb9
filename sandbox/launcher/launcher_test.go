package launcher

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestArgs: what Args writes, parse reads back, and bad arguments are
// refused with what is wrong.
func TestArgs(t *testing.T) {
	r := Rules{Read: []string{"/usr", "/a b"}, Write: []string{"/w=x"}, Connect: []uint16{0, 443, 65535}, OpenNetwork: true}
	args := Args(r, "/bin/sh", []string{"sh", "-c", "--"})
	if args[0] != Arg {
		t.Fatalf("argv[1] %q", args[0])
	}
	got, path, argv, err := parse(args[1:])
	if err != nil || !reflect.DeepEqual(got, r) || path != "/bin/sh" || !reflect.DeepEqual(argv, []string{"sh", "-c", "--"}) {
		t.Fatalf("parse(Args) = %+v %q %q %v", got, path, argv, err)
	}
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"r=/usr"}, "no -- before the program"},
		{[]string{"--", "/bin/true"}, "no program to run after --"},
		{[]string{"x=/usr", "--", "/bin/true", "true"}, "unknown launcher argument x=/usr"},
		{[]string{"/usr", "--", "/bin/true", "true"}, "unknown launcher argument /usr"},
		{[]string{"c=65536", "--", "/bin/true", "true"}, "bad port 65536"},
		{[]string{"c=8o", "--", "/bin/true", "true"}, "bad port 8o"},
		{[]string{"n=closed", "--", "/bin/true", "true"}, "unknown launcher argument n=closed"},
	} {
		if _, _, _, err := parse(tt.args); err == nil || err.Error() != tt.err {
			t.Errorf("parse(%q) = %v, want %q", tt.args, err, tt.err)
		}
	}
}

// TestImportsStayLean: the launcher runs before a daemon's hundreds of
// package inits only while it imports nothing outside the standard
// library and nothing that needs reflect (see the package comment).
func TestImportsStayLean(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "reflect" || dep == "fmt" || strings.Contains(strings.Split(dep, "/")[0], ".") && !strings.HasSuffix(dep, "/sandbox/launcher") {
			t.Errorf("the launcher imports %s", dep)
		}
	}
}
