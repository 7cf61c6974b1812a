package cublas

import (
	"fmt"
	"strings"
	"testing"
)

// A library that is not there gives an error naming it and the variable
// that overrides the search, never a panic.
func TestLoadFromMissingPathNamesIt(t *testing.T) {
	const missing = "no-such-dir/libcublas.so.99"
	t.Setenv(EnvPath, missing)
	_, err := load()
	if err == nil {
		t.Fatal("loading a missing library succeeded")
	}
	for _, want := range []string{missing, EnvPath} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// Without the override, a failed search lists every file it tried.
func TestSearchErrorListsCandidates(t *testing.T) {
	t.Setenv(EnvPath, "")
	path, err := load()
	if err == nil {
		t.Skipf("this machine has cuBLAS (%s): the not-found message cannot be checked here", path)
	}
	for _, major := range Majors {
		if want := fmt.Sprintf("libcublas.so.%d", major); !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not list %s", err, want)
		}
	}
}

func TestStatusError(t *testing.T) {
	if got := Status(7).Error(); !strings.Contains(got, "7") {
		t.Errorf("Status(7).Error() = %q, want the code in it", got)
	}
}
