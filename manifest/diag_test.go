package manifest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiagnosticString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Diagnostic
		want string
	}{
		{"error", Diagnostic{Path: "a/nexus.toml", Line: 3, Col: 7, Message: "bad"}, "a/nexus.toml:3:7: bad"},
		{"warning", Diagnostic{Path: "a/nexus.toml", Line: 1, Col: 1, Severity: Warning, Message: "odd"}, "a/nexus.toml:1:1: warning: odd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.d.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDiagnosticsErr(t *testing.T) {
	t.Parallel()
	warn := Diagnostic{Path: "b", Line: 1, Col: 1, Severity: Warning, Message: "w"}
	err1 := Diagnostic{Path: "a", Line: 2, Col: 1, Message: "e1"}
	err2 := Diagnostic{Path: "a", Line: 5, Col: 1, Message: "e2"}
	tests := []struct {
		name      string
		ds        Diagnostics
		hasErrors bool
		err       string
	}{
		{"none", nil, false, ""},
		{"warnings only", Diagnostics{warn}, false, ""},
		{"errors and warnings", Diagnostics{err1, warn, err2}, true, "a:2:1: e1\na:5:1: e2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.ds.HasErrors(); got != tt.hasErrors {
				t.Errorf("HasErrors() = %v, want %v", got, tt.hasErrors)
			}
			err := tt.ds.Err()
			if tt.err == "" {
				if err != nil {
					t.Errorf("Err() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.err {
				t.Fatalf("Err() = %v, want %q", err, tt.err)
			}
			var d Diagnostic
			if !errors.As(err, &d) || d != err1 {
				t.Errorf("errors.As(Err()) = %v, want %v", d, err1)
			}
		})
	}
}

func TestDiagnosticsSort(t *testing.T) {
	t.Parallel()
	ds := Diagnostics{
		{Path: "b", Line: 1, Col: 1, Message: "b1"},
		{Path: "a", Line: 2, Col: 1, Message: "a2"},
		{Path: "a", Line: 1, Col: 9, Message: "a1:9"},
		{Path: "a", Line: 1, Col: 2, Message: "a1:2 first"},
		{Path: "a", Line: 1, Col: 2, Message: "a1:2 second"},
	}
	ds.Sort()
	var got []string
	for _, d := range ds {
		got = append(got, d.Message)
	}
	want := []string{"a1:2 first", "a1:2 second", "a1:9", "a2", "b1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sort (-want +got):\n%s", diff)
	}
}
