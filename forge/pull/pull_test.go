package pull

import "testing"

func TestCommitMessageText(t *testing.T) {
	tests := []struct {
		msg  CommitMessage
		want string
	}{
		{CommitMessage{Title: "T", Body: "B", Trailer: "X: y"}, "T\n\nB\n\nX: y\n"},
		{CommitMessage{Title: " T ", Body: "\nB\n\n", Trailer: "X: y\n"}, "T\n\nB\n\nX: y\n"},
		{CommitMessage{Title: "T", Trailer: "X: y"}, "T\n\nX: y\n"},
		{CommitMessage{Title: "T"}, "T\n"},
	}
	for _, tc := range tests {
		if got, err := tc.msg.Text(); err != nil || got != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.msg, got, err, tc.want)
		}
	}
}
