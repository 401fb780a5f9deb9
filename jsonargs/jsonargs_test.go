package jsonargs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type args struct {
	Path     string   `json:"path"`
	Raw      bool     `json:"raw,omitempty"`
	Args     []string `json:"args,omitempty"`
	MaxBytes *int64   `json:"max_bytes,omitempty"`
	Count    int      `json:"count"`
	Ratio    float64  `json:"ratio"`
	Nums     []int    `json:"nums"`
}

func TestDecode(t *testing.T) {
	seven := int64(7)
	tests := []struct {
		name     string
		raw      string
		required []string
		want     args
		wantErr  string
	}{
		{name: "empty stands for {}", raw: ""},
		{name: "blank stands for {}", raw: " \n\t"},
		{name: "all arguments", raw: `{"path":"a","raw":true,"args":["x"],"max_bytes":7,"count":2,"ratio":0.5,"nums":[1]}`, required: []string{"path"},
			want: args{Path: "a", Raw: true, Args: []string{"x"}, MaxBytes: &seven, Count: 2, Ratio: 0.5, Nums: []int{1}}},
		{name: "null optional argument", raw: `{"path":"a","max_bytes":null}`, want: args{Path: "a"}},
		{name: "array", raw: `["a"]`, wantErr: "arguments of t must be one JSON object"},
		{name: "null", raw: `null`, wantErr: "arguments of t must be one JSON object"},
		{name: "not JSON", raw: `{"path":`, wantErr: "arguments of t must be one JSON object"},
		{name: "unknown argument", raw: `{"path":"a","bogus":1}`, wantErr: `unknown argument "bogus" for t; it takes path, raw, args, max_bytes, count, ratio, nums`},
		{name: "another case", raw: `{"PATH":"a"}`, wantErr: `unknown argument "PATH" for t; it takes path, raw, args, max_bytes, count, ratio, nums`},
		{name: "first unknown by name", raw: `{"zz":1,"aa":2}`, wantErr: `unknown argument "aa" for t`},
		{name: "unknown before missing", raw: `{"bogus":1}`, required: []string{"path"}, wantErr: `unknown argument "bogus" for t`},
		{name: "long unknown name", raw: `{"` + strings.Repeat("x", 130) + `":1}`, wantErr: `unknown argument "` + strings.Repeat("x", 120) + `"… for t`},
		{name: "missing", raw: `{}`, required: []string{"path"}, wantErr: "t needs argument path"},
		{name: "null required", raw: `{"path": null }`, required: []string{"path"}, wantErr: "t needs argument path"},
		{name: "missing in order of required", raw: `{}`, required: []string{"count", "path"}, wantErr: "t needs argument count"},
		{name: "missing before mistyped", raw: `{"path":7}`, required: []string{"path", "count"}, wantErr: "t needs argument count"},
		{name: "number for a string", raw: `{"path":7}`, wantErr: "argument path of t must be a string, not number"},
		{name: "array for a string", raw: `{"path":["a"]}`, wantErr: "argument path of t must be a string, not array"},
		{name: "string for a boolean", raw: `{"raw":"yes"}`, wantErr: "argument raw of t must be a boolean, not string"},
		{name: "string for an integer pointer", raw: `{"max_bytes":"7"}`, wantErr: "argument max_bytes of t must be an integer, not string"},
		{name: "fraction for an integer", raw: `{"count":1.5}`, wantErr: "argument count of t must be an integer, not number 1.5"},
		{name: "string for a number", raw: `{"ratio":"x"}`, wantErr: "argument ratio of t must be a number, not string"},
		{name: "string for strings", raw: `{"args":"x"}`, wantErr: "argument args of t must be an array of strings, not string"},
		{name: "number in strings", raw: `{"args":["x",1]}`, wantErr: "argument args of t must be a string, not number"},
		{name: "string for integers", raw: `{"nums":"x"}`, wantErr: "argument nums of t must be []int, not string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got args
			err := Decode("t", json.RawMessage(tt.raw), &got, tt.required...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("decoded %+v, want %+v", got, tt.want)
				}
				return
			}
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("Decode error %v (%T), want an *Error", err, err)
			}
			if !strings.HasPrefix(e.Message, tt.wantErr) || e.Error() != e.Message {
				t.Errorf("message %q, want it to start with %q", e.Message, tt.wantErr)
			}
		})
	}
}

// picky refuses every value, as a field type with its own UnmarshalJSON may.
type picky struct{}

func (*picky) UnmarshalJSON([]byte) error { return errors.New("picky says no") }

func TestDecodeUnmarshalerError(t *testing.T) {
	var dst struct {
		P picky `json:"p"`
	}
	err := Decode("t", json.RawMessage(`{"p":1}`), &dst)
	if want := "arguments of t: picky says no"; err == nil || err.Error() != want {
		t.Errorf("Decode: %v, want %s", err, want)
	}
}

func TestDecodeNoArguments(t *testing.T) {
	var none struct{}
	err := Decode("plugins.list", json.RawMessage(`{"x":1}`), &none)
	if want := `unknown argument "x" for plugins.list; it takes none`; err == nil || err.Error() != want {
		t.Errorf("Decode: %v, want %s", err, want)
	}
	if err := Decode("plugins.list", json.RawMessage(`{}`), &none); err != nil {
		t.Errorf("Decode {}: %v", err)
	}
}

func TestDecodeBadDestination(t *testing.T) {
	var nilArgs *args
	var s string
	for _, dst := range []any{nil, args{}, nilArgs, &s} {
		err := Decode("t", json.RawMessage(`{}`), dst)
		if err == nil {
			t.Errorf("Decode into %T: no error", dst)
			continue
		}
		if _, ok := errors.AsType[*Error](err); ok {
			t.Errorf("Decode into %T: %v is an *Error, a refusal of the arguments", dst, err)
		}
		if !strings.Contains(err.Error(), "want a non-nil pointer to a struct") {
			t.Errorf("Decode into %T: %v", dst, err)
		}
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		dst  any
		want []string
	}{
		{"tags in field order", &args{}, []string{"path", "raw", "args", "max_bytes", "count", "ratio", "nums"}},
		{"untagged, skipped and unexported", &struct {
			Plain  string
			Named  string `json:",omitempty"`
			Hidden string `json:"-"`
			hidden string
		}{}, []string{"Plain", "Named"}},
		{"no fields", &struct{}{}, []string{}},
		{"not a pointer", args{}, nil},
		{"nil", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Names(tt.dst); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Names = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"short", `a"b`, `"a\"b"`},
		{"exactly the limit", strings.Repeat("x", 120), `"` + strings.Repeat("x", 120) + `"`},
		{"over the limit", strings.Repeat("x", 121), `"` + strings.Repeat("x", 120) + `"…`},
		{"cut before a split character", strings.Repeat("x", 119) + "é", `"` + strings.Repeat("x", 119) + `"…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quote(tt.in); got != tt.want {
				t.Errorf("Quote = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"no HTML escaping", map[string]string{"a": "<b> & </b>"}, `{"a":"<b> & </b>"}`},
		{"no trailing newline", []int{1, 2}, `[1,2]`},
		{"null", nil, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if err != nil || string(got) != tt.want {
				t.Errorf("Marshal = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if _, err := Marshal(make(chan int)); err == nil {
		t.Error("Marshal of a channel: no error")
	}
}
