package tools

import "encoding/json"

// schema is the subset of JSON Schema (draft 2020-12) that OpenAI function
// tools accept.
type schema struct {
	Type                 string             `json:"type"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
	Items                *schema            `json:"items,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Minimum              *int64             `json:"minimum,omitempty"`
	Maximum              *int64             `json:"maximum,omitempty"`
}

func object(props map[string]*schema, required ...string) *schema {
	no := false
	return &schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &no}
}

func str(desc string) *schema     { return &schema{Type: "string", Description: desc} }
func boolean(desc string) *schema { return &schema{Type: "boolean", Description: desc} }

// integer describes an integer argument; max < 0 means no maximum.
func integer(desc string, min, max int64) *schema {
	s := &schema{Type: "integer", Description: desc, Minimum: &min}
	if max >= 0 {
		s.Maximum = &max
	}
	return s
}

const (
	pathDesc     = "Path relative to the workspace root, such as src/main.go. No absolute paths, no .. out of the workspace."
	dirPathDesc  = "Directory (or file) relative to the workspace root; default the workspace itself."
	globDesc     = "Optional path.Match pattern: without a slash (*.go) it matches the base name at any depth, with a slash (cmd/*.go) the workspace-relative path; a leading **/ matches below any directory."
	offsetDesc   = "Number of results to skip; pass the next_offset of the previous page. Default 0."
	pageByteDesc = "Maximum size in bytes of the encoded output page; default 65536, at most 1048576."
	digestDesc   = "SHA-256 hex digest (content_sha256) of the whole file as last read."
)

func toolSchema(tool string) *schema {
	switch tool {
	case Read:
		return object(map[string]*schema{
			"path":         str(pathDesc),
			"offset_bytes": integer("Byte offset to start reading at, on a character boundary; pass next_offset_bytes to continue. Default 0.", 0, -1),
			"max_bytes":    integer("Maximum bytes of content to return; default 65536, at most 1048576.", 1, maxReadBytes),
		}, "path")
	case Write:
		mode := str("create makes a new file and never overwrites; replace changes an existing file and needs expected_sha256.")
		mode.Enum = []string{ModeCreate, ModeReplace}
		return object(map[string]*schema{
			"path":            str(pathDesc + " Missing parent directories are created."),
			"content":         str("The complete new content of the file, UTF-8, at most 1048576 bytes."),
			"mode":            mode,
			"expected_sha256": str("Required with mode replace, refused with create: " + digestDesc),
		}, "path", "content", "mode")
	case Edit:
		return object(map[string]*schema{
			"path":            str(pathDesc),
			"old_text":        str("Exact text to replace; it must occur exactly once in the file, so include enough surrounding lines."),
			"new_text":        str("Text that replaces old_text; empty deletes it."),
			"expected_sha256": str("Optional: " + digestDesc + " The edit fails with conflict if the file changed."),
		}, "path", "old_text", "new_text")
	case Exec:
		return object(map[string]*schema{
			"program":          str("Program to run: a name looked up in PATH (go, git, /bin/sh), an absolute path, or a path with a slash relative to cwd (./build.sh)."),
			"args":             {Type: "array", Description: "Arguments, one per element, without shell quoting.", Items: &schema{Type: "string"}},
			"cwd":              str("Working directory relative to the workspace root; default the workspace root."),
			"stdin":            str("Text given to the program on standard input; default none."),
			"timeout_ms":       integer("Timeout in milliseconds; default 30000, at most 300000. The process group is killed when it expires.", 1, maxTimeoutMS),
			"max_output_bytes": integer("Bytes of stdout and stderr kept together; default 262144, at most 1048576. The rest is discarded and counted.", 0, maxOutputBytes),
		}, "program")
	case Search:
		return object(map[string]*schema{
			"pattern":       str("Go RE2 regular expression matched against each line (text when literal is true)."),
			"path":          str(dirPathDesc),
			"glob":          str(globDesc),
			"literal":       boolean("Match pattern as plain text; default false."),
			"ignore_case":   boolean("Match case-insensitively; default false."),
			"context_lines": integer("Lines of context before and after each match; default 0, at most 20.", 0, maxContextLines),
			"max_results":   integer("Matches per page; default 50, at most 200.", 1, maxMaxResults),
			"offset":        integer(offsetDesc, 0, -1),
			"max_bytes":     integer(pageByteDesc, 1, maxPageBytes),
		}, "pattern")
	case List:
		return object(map[string]*schema{
			"path":        str(dirPathDesc),
			"glob":        str(globDesc),
			"recursive":   boolean("List subdirectories too, depth first; default false."),
			"max_depth":   integer("Levels listed when recursive is true; default 3.", 1, -1),
			"max_entries": integer("Entries per page; default 200, at most 500.", 1, maxMaxEntries),
			"offset":      integer(offsetDesc, 0, -1),
			"max_bytes":   integer(pageByteDesc, 1, maxPageBytes),
		})
	}
	return nil
}

// Schema returns the JSON Schema of a tool's arguments (type object,
// properties, required, additionalProperties false, descriptions stating
// defaults and maxima), or nil for an unknown tool.
func Schema(tool string) json.RawMessage {
	s := toolSchema(tool)
	if s == nil {
		return nil
	}
	// A schema is a tree of strings, integers and booleans: it always encodes.
	b, _ := json.Marshal(s)
	return b
}

// Description returns a one-paragraph description of the tool for a model,
// or "" for an unknown tool.
func Description(tool string) string {
	switch tool {
	case Read:
		return "Read a UTF-8 text file of the workspace. Returns up to max_bytes of content from offset_bytes; when more follows, truncated is true and next_offset_bytes tells where to continue. content_sha256, the SHA-256 of the whole file, is returned only when the whole file was read in one call; pass it as expected_sha256 to write (mode replace) or edit."
	case Write:
		return "Write a whole file of the workspace with UTF-8 content of at most 1 MiB, atomically. Mode create makes a new file (and missing parent directories) and fails with conflict if the path exists. Mode replace overwrites an existing regular file and needs expected_sha256, the content_sha256 from reading the whole file; it fails with conflict if the file changed since. Prefer edit for small changes."
	case Edit:
		return "Replace exactly one occurrence of old_text with new_text in a regular file of the workspace (at most 1 MiB). Fails with conflict when old_text occurs zero times or more than once (include more surrounding text to make it unique), or when expected_sha256 is given and no longer matches the file."
	case Exec:
		return "Run a program in the workspace without a shell: program and args form the argv (for shell syntax, run /bin/sh with args [\"-c\", \"...\"]). Returns exit_code, stdout and stderr; a nonzero exit_code is a normal result. stdout and stderr together keep at most max_output_bytes; truncated says output was cut. The whole process group is killed at timeout_ms."
	case Search:
		return "Search the UTF-8 text files under path for lines matching a Go RE2 regular expression (or plain text with literal). Reports the first match of each line with path, 1-based line and byte column; lines over 300 bytes are cut around the match. Walks depth first in byte order of names, never follows symbolic links, skips .git, .axlr and .kernel, and counts in files_skipped files over 1 MiB, binary or non-UTF-8 files. When next_offset is present, call again with offset set to it."
	case List:
		return "List the entries of a directory of the workspace with their type (file, dir, symlink, other) and the size of files, depth first in byte order of names; recursive descends up to max_depth levels. Symbolic links are reported, never followed; .git is listed but not entered. When next_offset is present, call again with offset set to it."
	}
	return ""
}
