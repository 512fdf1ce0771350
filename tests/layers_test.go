package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesPointDown: cmd → handlers → templates → store, and never back up; and the
// server (echo assembly, middleware, error rendering) does not import the record API's handler,
// which is handed to it by whoever builds it.
func TestDependenciesPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "dataplatform/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	rank := func(pkg string) int {
		for i, layer := range []string{"dataplatform/store", "dataplatform/templates", "dataplatform/handlers", "dataplatform/cmd"} {
			if pkg == layer || strings.HasPrefix(pkg, layer+"/") {
				return i
			}
		}
		return -1 // gen, tests: outside the layers
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 30 {
		t.Fatalf("go list listed %d packages", len(lines))
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		from := rank(fields[0])
		if from < 0 {
			continue
		}
		for _, imp := range fields[1:] {
			if to := rank(imp); to > from {
				t.Errorf("%s imports %s: a lower layer may not import a higher one", fields[0], imp)
			}
			// The server is given the area handlers it mounts (Deps.Records, Deps.Agents).
			for _, area := range []string{"dataplatform/handlers/records", "dataplatform/handlers/mcp"} {
				if (fields[0] == "dataplatform/handlers/server" || strings.HasPrefix(fields[0], "dataplatform/handlers/server/")) &&
					(imp == area || strings.HasPrefix(imp, area+"/")) {
					t.Errorf("%s imports %s: the server is given the area's handlers through its Deps", fields[0], imp)
				}
			}
		}
	}
}
