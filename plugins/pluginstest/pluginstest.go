// Package pluginstest is an MCP server for tests of plugin hosts, built on
// the go-sdk server. Serve it over Streamable HTTP with
// mcp.NewStreamableHTTPHandler, or over stdio from a re-executed test
// binary: call MainIfServer first in TestMain and start os.Executable()
// with EnvServer=ServeStdio in the child's environment.
package pluginstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvServer is the variable MainIfServer reads.
const EnvServer = "AXLR_PLUGINS_TEST_SERVER"

// Values of EnvServer.
const (
	// ServeStdio serves NewServer over stdin and stdout.
	ServeStdio = "serve"
	// ExitEarly exits with status 3 before any handshake: a server that
	// fails to launch.
	ExitEarly = "exit"
)

// Tools of NewServer.
const (
	// ToolEcho returns its argument text as text and as structured content
	// {"text": …}.
	ToolEcho = "echo"
	// ToolEnv returns the server's environment, sorted, as structured
	// content {"env": […]}.
	ToolEnv = "env"
	// ToolFail returns an error result (isError) with FailMessage.
	ToolFail = "fail"
	// ToolSleep answers only when the call is cancelled.
	ToolSleep = "sleep"
	// ToolExit ends the server's process in the middle of the call (stdio).
	ToolExit = "exit"
	// ToolPID returns the server's process id as structured content
	// {"pid": …}.
	ToolPID = "pid"
	// ToolDotted has a '.' in its name, which a model's function name
	// cannot hold.
	ToolDotted = "notes.search"
	// ToolSecret is one a test manifest leaves out of allow_tools.
	ToolSecret = "secret"
	// ToolBadName is advertised although its name is not a valid MCP
	// name.
	ToolBadName = "bad name"
	// ToolLongDescription has a description of LongDescriptionBytes.
	ToolLongDescription = "long_description"
	// ToolHugeSchema has an input schema over 64 KiB.
	ToolHugeSchema = "huge_schema"
)

// FailMessage is the text of ToolFail's error result.
const FailMessage = "the tool failed on purpose"

// LongDescriptionBytes is the length of ToolLongDescription's description.
const LongDescriptionBytes = 10_000

// MainIfServer serves when EnvServer is set, and then exits the process;
// otherwise it returns at once.
func MainIfServer() {
	switch os.Getenv(EnvServer) {
	case "":
		return
	case ServeStdio:
		err := NewServer().Run(context.Background(), &mcp.StdioTransport{})
		if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			fmt.Fprintf(os.Stderr, "pluginstest server: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	case ExitEarly:
		fmt.Fprintln(os.Stderr, "pluginstest server: exiting before the handshake, as asked")
		os.Exit(3)
	default:
		fmt.Fprintf(os.Stderr, "pluginstest server: %s=%q: want %q or %q\n", EnvServer, os.Getenv(EnvServer), ServeStdio, ExitEarly)
		os.Exit(2)
	}
}

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

type envOut struct {
	Env []string `json:"env"`
}

type pidOut struct {
	PID int `json:"pid"`
}

type none struct{}

// NewServer returns a server with the tools above.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "pluginstest", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: ToolEcho, Description: "Echoes text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, echoOut(in), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolEnv, Description: "Reports the server's environment."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, envOut, error) {
			env := os.Environ()
			slices.Sort(env)
			return nil, envOut{Env: env}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolFail, Description: "Fails."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New(FailMessage)
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolSleep, Description: "Waits for the call's cancellation."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolExit, Description: "Ends the server's process."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			os.Exit(0)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolPID, Description: "Reports the server's process id."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, pidOut, error) {
			return nil, pidOut{PID: os.Getpid()}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolDotted, Description: "Has a dot in its name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut(in), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolSecret, Description: "Not allowed."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolLongDescription, Description: strings.Repeat("é", LongDescriptionBytes/2)},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	props := map[string]any{}
	for i := range 2000 {
		props[fmt.Sprintf("field_%04d", i)] = map[string]any{"type": "string", "description": "padding"}
	}
	s.AddTool(&mcp.Tool{Name: ToolHugeSchema, InputSchema: map[string]any{"type": "object", "properties": props}}, noop)
	// The SDK only logs an invalid name, and advertises the tool.
	s.AddTool(&mcp.Tool{Name: ToolBadName, InputSchema: map[string]any{"type": "object"}}, noop)
	return s
}

func noop(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
}
