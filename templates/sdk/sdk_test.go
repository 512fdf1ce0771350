package sdk

import (
	"os"
	"strings"
	"testing"
)

func TestRuntimeVersionMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/oapi-codegen/runtime" {
			if f[1] != runtimeModuleVersion {
				t.Fatalf("go.mod requires oapi-codegen/runtime %s; runtimeModuleVersion is %s", f[1], runtimeModuleVersion)
			}
			return
		}
	}
	t.Fatal("go.mod does not require github.com/oapi-codegen/runtime")
}
