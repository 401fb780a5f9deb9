package tools

import (
	"context"
	"strings"
	"testing"
)

// TestCheckRefusals covers the refusals that read no file. Check and Call
// must give the same code and message for each.
func TestCheckRefusals(t *testing.T) {
	big := strings.Repeat("x", maxFileBytes+1)
	digest := strings.Repeat("a", 64)
	tests := []struct {
		name string
		tool string
		args any
		code string
		msg  string
		// shape: the arguments do not have the tool's shape (Malformed).
		shape bool
	}{
		// The shape of the arguments.
		{"unknown tool", "delete", `{}`, CodeInvalidRequest, `unknown tool "delete"`, true},
		{"unknown field", Read, `{"path":"a.txt","bogus":1}`, CodeInvalidRequest, `unknown argument "bogus" for read`, true},
		{"field in another case", Read, `{"PATH":"a.txt"}`, CodeInvalidRequest, `unknown argument "PATH" for read`, true},
		{"missing field", Read, `{}`, CodeInvalidRequest, "read needs argument path", true},
		{"null field", Read, `{"path":null}`, CodeInvalidRequest, "read needs argument path", true},
		{"wrong type string", Read, `{"path":3}`, CodeInvalidRequest, "argument path of read must be a string", true},
		{"wrong type integer", Read, `{"path":"a","max_bytes":"9"}`, CodeInvalidRequest, "argument max_bytes of read must be an integer", true},
		{"fraction for integer", Exec, `{"program":"true","timeout_ms":1.5}`, CodeInvalidRequest, "argument timeout_ms of exec must be an integer", true},
		{"wrong type boolean", Search, `{"pattern":"x","literal":"yes"}`, CodeInvalidRequest, "argument literal of search must be a boolean", true},
		{"wrong type array", Exec, `{"program":"echo","args":"a b"}`, CodeInvalidRequest, "argument args of exec must be an array of strings", true},
		{"array not object", Read, `["a.txt"]`, CodeInvalidRequest, "arguments of read must be one JSON object", true},
		{"null arguments", List, `null`, CodeInvalidRequest, "arguments of list must be one JSON object", true},
		{"two documents", List, `{} {}`, CodeInvalidRequest, "arguments of list must be one JSON object", true},
		{"missing mode", Write, `{"path":"a","content":""}`, CodeInvalidRequest, "write needs argument mode", true},
		{"missing content", Write, `{"path":"a","mode":"create"}`, CodeInvalidRequest, "write needs argument content", true},
		{"missing old_text", Edit, `{"path":"a","new_text":""}`, CodeInvalidRequest, "edit needs argument old_text", true},
		{"missing new_text", Edit, `{"path":"a","old_text":"x"}`, CodeInvalidRequest, "edit needs argument new_text", true},
		{"missing program", Exec, `{}`, CodeInvalidRequest, "exec needs argument program", true},
		{"missing pattern", Search, `{}`, CodeInvalidRequest, "search needs argument pattern", true},

		// Paths.
		{"absolute path", Read, map[string]any{"path": "/etc/passwd"}, CodeInvalidRequest, `path "/etc/passwd" is absolute`, false},
		{"dot dot", Read, map[string]any{"path": "../x"}, CodeInvalidRequest, `path "../x" climbs out of the workspace`, false},
		{"dot dot after a name", Read, map[string]any{"path": "a/../../x"}, CodeInvalidRequest, `path "a/../../x" climbs out of the workspace`, false},
		{"bare dot dot", List, map[string]any{"path": ".."}, CodeInvalidRequest, `path ".." climbs out of the workspace`, false},
		{"dot dot with separator", List, map[string]any{"path": "../"}, CodeInvalidRequest, `path "../" climbs out`, false},
		{"absolute search path", Search, map[string]any{"pattern": "x", "path": "/"}, CodeInvalidRequest, `path "/" is absolute`, false},
		{"write dot dot", Write, map[string]any{"path": "sub/../../x", "content": "", "mode": "create"}, CodeInvalidRequest, `path "sub/../../x" climbs out`, false},
		{"edit absolute", Edit, map[string]any{"path": "/etc/hosts", "old_text": "a", "new_text": "b"}, CodeInvalidRequest, `path "/etc/hosts" is absolute`, false},
		{"NUL in path", Read, map[string]any{"path": "a\x00b"}, CodeInvalidRequest, "path contains a NUL byte", false},
		{"empty path", Read, map[string]any{"path": ""}, CodeInvalidRequest, `path "" does not name a file`, false},
		{"workspace as file", Write, map[string]any{"path": ".", "content": "", "mode": "create"}, CodeInvalidRequest, `path "." does not name a file`, false},
		{"trailing separator", Read, map[string]any{"path": "sub/"}, CodeInvalidRequest, `path "sub/" does not name a file`, false},
		{"absolute cwd", Exec, map[string]any{"program": "true", "cwd": "/tmp"}, CodeInvalidRequest, `cwd "/tmp" is absolute`, false},
		{"cwd climbing", Exec, map[string]any{"program": "true", "cwd": "sub/../.."}, CodeInvalidRequest, `cwd "sub/../.." climbs out`, false},
		{"program climbing", Exec, map[string]any{"program": "../bin/tool"}, CodeInvalidRequest, `program "../bin/tool" climbs out`, false},
		{"program climbing from cwd", Exec, map[string]any{"program": "../../tool", "cwd": "sub"}, CodeInvalidRequest, `program "../../tool" climbs out`, false},
		{"NUL in program", Exec, map[string]any{"program": "tr\x00ue"}, CodeInvalidRequest, "program contains a NUL byte", false},

		// Sizes.
		{"content over 1 MiB", Write, map[string]any{"path": "a", "content": big, "mode": "create"}, CodeInvalidRequest, "content is 1048577 bytes, over the 1048576 byte write limit", false},
		{"new_text over 1 MiB", Edit, map[string]any{"path": "a", "old_text": "x", "new_text": big}, CodeInvalidRequest, "new_text is 1048577 bytes, over the 1048576 byte write limit", false},
		{"old_text over 1 MiB", Edit, map[string]any{"path": "a", "old_text": big, "new_text": ""}, CodeInvalidRequest, "old_text is 1048577 bytes", false},

		// Consistency of write and edit.
		{"replace without digest", Write, map[string]any{"path": "a", "content": "x", "mode": "replace"}, CodeInvalidArguments, "mode replace needs expected_sha256", false},
		{"create with digest", Write, map[string]any{"path": "a", "content": "x", "mode": "create", "expected_sha256": digest}, CodeInvalidArguments, "mode create takes no expected_sha256", false},
		{"unknown mode", Write, map[string]any{"path": "a", "content": "x", "mode": "append"}, CodeInvalidArguments, `mode "append" is neither create nor replace`, false},
		{"short digest", Write, map[string]any{"path": "a", "content": "x", "mode": "replace", "expected_sha256": "abc"}, CodeInvalidArguments, `expected_sha256 "abc" is not a SHA-256 hex digest`, false},
		{"digest not hex", Edit, map[string]any{"path": "a", "old_text": "x", "new_text": "y", "expected_sha256": strings.Repeat("g", 64)}, CodeInvalidArguments, "is not a SHA-256 hex digest", false},
		{"empty old_text", Edit, map[string]any{"path": "a", "old_text": "", "new_text": "y"}, CodeInvalidArguments, "old_text must not be empty", false},

		// Limits over their maxima and under their minima.
		{"read max_bytes", Read, map[string]any{"path": "a", "max_bytes": 2 << 20}, CodeInvalidArguments, "max_bytes 2097152 exceeds the 1048576 byte limit", false},
		{"read max_bytes zero", Read, map[string]any{"path": "a", "max_bytes": 0}, CodeInvalidArguments, "max_bytes must be at least 1, not 0", false},
		{"read negative offset", Read, map[string]any{"path": "a", "offset_bytes": -1}, CodeInvalidArguments, "offset_bytes must be at least 0, not -1", false},
		{"timeout_ms", Exec, map[string]any{"program": "true", "timeout_ms": 600000}, CodeInvalidArguments, "timeout_ms 600000 exceeds the 300000 ms limit", false},
		{"timeout_ms zero", Exec, map[string]any{"program": "true", "timeout_ms": 0}, CodeInvalidArguments, "timeout_ms must be at least 1, not 0", false},
		{"max_output_bytes", Exec, map[string]any{"program": "true", "max_output_bytes": 1<<20 + 1}, CodeInvalidArguments, "max_output_bytes 1048577 exceeds the 1048576 byte limit", false},
		{"negative max_output_bytes", Exec, map[string]any{"program": "true", "max_output_bytes": -1}, CodeInvalidArguments, "max_output_bytes must be at least 0, not -1", false},
		{"empty program", Exec, map[string]any{"program": ""}, CodeInvalidArguments, "program must not be empty", false},
		{"NUL in an argument", Exec, map[string]any{"program": "echo", "args": []string{"a", "b\x00"}}, CodeInvalidArguments, "args[1] contains a NUL byte", false},
		{"empty pattern", Search, map[string]any{"pattern": ""}, CodeInvalidArguments, "pattern must not be empty", false},
		{"bad pattern", Search, map[string]any{"pattern": "a("}, CodeInvalidArguments, `pattern "a(" is not a valid RE2 expression`, false},
		{"bad search glob", Search, map[string]any{"pattern": "x", "glob": "[a"}, CodeInvalidArguments, `glob "[a" is not a valid pattern`, false},
		{"max_results", Search, map[string]any{"pattern": "x", "max_results": 201}, CodeInvalidArguments, "max_results 201 exceeds the 200 result limit", false},
		{"max_results zero", Search, map[string]any{"pattern": "x", "max_results": 0}, CodeInvalidArguments, "max_results must be at least 1, not 0", false},
		{"context_lines", Search, map[string]any{"pattern": "x", "context_lines": 21}, CodeInvalidArguments, "context_lines 21 exceeds the 20 line limit", false},
		{"search max_bytes", Search, map[string]any{"pattern": "x", "max_bytes": 1<<20 + 1}, CodeInvalidArguments, "max_bytes 1048577 exceeds the 1048576 byte limit", false},
		{"search negative offset", Search, map[string]any{"pattern": "x", "offset": -3}, CodeInvalidArguments, "offset must be at least 0, not -3", false},
		{"max_entries", List, map[string]any{"max_entries": 501}, CodeInvalidArguments, "max_entries 501 exceeds the 500 entry limit", false},
		{"list max_bytes", List, map[string]any{"max_bytes": 1<<20 + 1}, CodeInvalidArguments, "max_bytes 1048577 exceeds the 1048576 byte limit", false},
		{"max_depth zero", List, map[string]any{"recursive": true, "max_depth": 0}, CodeInvalidArguments, "max_depth must be at least 1, not 0", false},
		{"bad list glob", List, map[string]any{"glob": "a[]"}, CodeInvalidArguments, `glob "a[]" is not a valid pattern`, false},
	}
	w, _ := newWorkspace(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := args(t, tt.args)
			checkErr := Check(tt.tool, a)
			wantError(t, checkErr, tt.code, tt.msg)
			_, callErr := w.Call(context.Background(), tt.tool, a)
			if callErr == nil || callErr.Error() != checkErr.Error() {
				t.Fatalf("Call error = %v, Check error = %v", callErr, checkErr)
			}
			if tt.code == CodeInvalidRequest || tt.code == CodeInvalidArguments {
				if s := checkErr.(*Error).Status(); s != StatusRejected {
					t.Fatalf("status = %s, want rejected", s)
				}
			}
			if m := checkErr.(*Error).Malformed(); m != tt.shape {
				t.Fatalf("Malformed() = %v, want %v", m, tt.shape)
			}
		})
	}
}

// TestCheckAccepts pins arguments that pass every file-free check.
func TestCheckAccepts(t *testing.T) {
	tests := []struct {
		tool string
		args string
	}{
		{Read, `{"path":"a.txt","offset_bytes":0,"max_bytes":1048576}`},
		{Read, `{"path":"./sub/../a.txt"}`},
		{Write, `{"path":"new/dir/f.txt","content":"","mode":"create"}`},
		{Write, `{"path":"f","content":"x","mode":"replace","expected_sha256":"` + strings.Repeat("AB", 32) + `"}`},
		{Edit, `{"path":"f","old_text":"x","new_text":""}`},
		{Exec, `{"program":"go","args":["test","./..."],"cwd":"sub/","stdin":"","timeout_ms":300000,"max_output_bytes":0}`},
		{Search, `{"pattern":"x","path":"sub/","glob":"**/*.go","literal":true,"ignore_case":true,"context_lines":20,"max_results":200,"offset":7,"max_bytes":1048576}`},
		{List, ``},
		{List, `{"path":".","recursive":false,"max_depth":99,"max_entries":500}`},
	}
	for _, tt := range tests {
		if err := Check(tt.tool, []byte(tt.args)); err != nil {
			t.Errorf("Check(%s, %s) = %v", tt.tool, tt.args, err)
		}
	}
}

func TestErrorStatus(t *testing.T) {
	tests := map[string]string{
		CodeInvalidRequest:   StatusRejected,
		CodeInvalidArguments: StatusRejected,
		CodeInvalidPath:      StatusRejected,
		CodeInvalidOffset:    StatusRejected,
		CodeLimitTooSmall:    StatusRejected,
		CodeConflict:         StatusRejected,
		CodeNotFound:         StatusFailed,
		CodeNotRegularFile:   StatusRejected,
		CodeInvalidText:      StatusRejected,
		CodeFileTooLarge:     StatusRejected,
		CodeNotSearchable:    StatusRejected,
		CodePermissionDenied: StatusFailed,
		CodeFilesystemError:  StatusFailed,
		CodeStartFailed:      StatusFailed,
		CodeProcessError:     StatusFailed,
		CodeInternalError:    StatusFailed,
		CodeTimeout:          StatusTimedOut,
		CodeCancelled:        StatusCancelled,
	}
	for code, want := range tests {
		e := &Error{Code: code, Message: "m"}
		if got := e.Status(); got != want {
			t.Errorf("Status of %s = %s, want %s", code, got, want)
		}
		if e.Error() != code+": m" {
			t.Errorf("Error() = %q", e.Error())
		}
	}
}

func TestCallCancelledBeforeStart(t *testing.T) {
	w, _ := newWorkspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tool := range Names() {
		_, err := w.Call(ctx, tool, []byte(`{}`))
		wantError(t, err, CodeCancelled, tool+" was cancelled before it started")
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/file", "x")
	for _, p := range []string{dir + "/missing", dir + "/file"} {
		if _, err := Open(p, Options{}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Open(%s) error = %v, want one naming it", p, err)
		}
	}
	w, err := Open(dir+"/./", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Dir() != dir {
		t.Errorf("Dir() = %s, want %s", w.Dir(), dir)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadOnly(t *testing.T) {
	for _, tool := range Names() {
		want := tool == Read || tool == Search || tool == List
		if ReadOnly(tool) != want {
			t.Errorf("ReadOnly(%s) = %v", tool, !want)
		}
	}
}
