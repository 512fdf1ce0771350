// Package apiversions numbers a dataset's published descriptions: each accepted schema
// change is a new semantic version, major when oasdiff's breaking-change checks find a
// change that breaks clients, minor when the API changed otherwise (additions), patch when
// only documentation did. It also says which versions are current, deprecated or sunset.
package apiversions

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/oasdiff/checker"
	"github.com/oasdiff/oasdiff/diff"
	"github.com/oasdiff/oasdiff/load"
)

// Change is one difference between two versions, with its level: breaking (clients built
// for the older version may fail), warning (may break some), info (compatible).
type Change struct {
	Level     string `json:"level"`
	ID        string `json:"id"`
	Text      string `json:"text"`
	Operation string `json:"operation,omitempty"`
	Path      string `json:"path,omitempty"`
}

var localizer = checker.NewDefaultLocalizer()

// escalated are oasdiff checks that break this service's clients although oasdiff calls them
// warnings: record bodies are closed (additionalProperties: false) and unknown filters are
// refused, so a client still sending a removed field or filter gets a 400.
var escalated = map[string]checker.Level{
	"request-property-removed":  checker.ERR,
	"request-parameter-removed": checker.ERR,
}

// ignored are checks about the version number itself, which this package sets.
var ignored = map[string]bool{"api-version-not-bumped": true}

// Compare lists the changes from base to revision and whether anything at all differs
// (documentation included). Both must have their references resolved (as loaded).
func Compare(base, revision *openapi3.T) ([]Change, bool, error) {
	// The version and generation time differ by construction: they are not changes.
	b, r := *base, *revision
	if b.Info != nil && r.Info != nil {
		info := *r.Info
		info.Version = b.Info.Version
		info.Extensions = b.Info.Extensions
		r.Info = &info
	}
	r.Extensions = b.Extensions
	s1, s2 := &load.SpecInfo{Spec: &b, Url: "base"}, &load.SpecInfo{Spec: &r, Url: "revision"}
	d, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), s1, s2)
	if err != nil {
		return nil, false, err
	}
	found := checker.CheckBackwardCompatibilityUntilLevel(checker.NewConfig(checker.GetAllChecks(), checker.WithSeverityLevels(escalated)),
		d, sources, checker.INFO)
	out := make([]Change, 0, len(found))
	for _, c := range found {
		if ignored[c.GetId()] {
			continue
		}
		level := "info"
		switch c.GetLevel() {
		case checker.ERR:
			level = "breaking"
		case checker.WARN:
			level = "warning"
		}
		out = append(out, Change{Level: level, ID: c.GetId(), Text: c.GetUncolorizedText(localizer), Operation: c.GetOperation(), Path: c.GetPath()})
	}
	out = append(out, constraintChanges(&b, &r)...)
	return out, !d.Empty() || len(out) > 0, nil
}

// narrowing are the x-constraints kinds that JSON Schema cannot say, so oasdiff does not see
// them: a UNIQUE constraint or a foreign key added to a request property makes writes that
// used to succeed fail (409), which breaks clients like any narrowed schema. (NOT NULL, enum,
// pattern, range and length changes show in the schema itself, where oasdiff finds them.)
var narrowing = map[string]string{"unique": "unique (x-unique)", "foreign_key": "a foreign key"}

// constraintChanges lists the narrowing constraints added to (breaking) or removed from (info)
// the JSON request bodies' properties between two versions, per operation.
func constraintChanges(base, rev *openapi3.T) []Change {
	var out []Change
	if base.Paths == nil || rev.Paths == nil {
		return nil
	}
	for _, path := range rev.Paths.InMatchingOrder() {
		ri, bi := rev.Paths.Value(path), base.Paths.Value(path)
		if ri == nil || bi == nil {
			continue
		}
		for method, rop := range ri.Operations() {
			bop := bi.GetOperation(method)
			if bop == nil {
				continue
			}
			rp, bp := bodyProperties(rop), bodyProperties(bop)
			for _, name := range sortedKeys(rp) {
				old, ok := bp[name]
				if !ok {
					continue // a new property: oasdiff reports it
				}
				now := constraintKinds(rp[name])
				was := constraintKinds(old)
				for _, kind := range []string{"unique", "foreign_key"} {
					switch {
					case now[kind] && !was[kind]:
						out = append(out, Change{Level: "breaking", ID: "request-property-" + strings.ReplaceAll(kind, "_", "-") + "-added",
							Text:      fmt.Sprintf("the request property '%s' became %s: a write that used to succeed may now answer 409", name, narrowing[kind]),
							Operation: method, Path: path})
					case was[kind] && !now[kind]:
						out = append(out, Change{Level: "info", ID: "request-property-" + strings.ReplaceAll(kind, "_", "-") + "-removed",
							Text: fmt.Sprintf("the request property '%s' is no longer %s", name, narrowing[kind]), Operation: method, Path: path})
					}
				}
			}
		}
	}
	return out
}

// bodyProperties are the properties of an operation's JSON request body.
func bodyProperties(op *openapi3.Operation) openapi3.Schemas {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return nil
	}
	return mt.Schema.Value.Properties
}

// constraintKinds are the kinds of a property's x-constraints (and x-unique).
func constraintKinds(p *openapi3.SchemaRef) map[string]bool {
	kinds := map[string]bool{}
	if p == nil || p.Value == nil {
		return kinds
	}
	if u, _ := p.Value.Extensions["x-unique"].(bool); u {
		kinds["unique"] = true
	}
	switch cs := p.Value.Extensions["x-constraints"].(type) {
	case []map[string]string: // as specgen decorates a description
		for _, c := range cs {
			kinds[c["type"]] = true
		}
	case []any: // as a description is loaded from JSON
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if k, ok := m["type"].(string); ok {
					kinds[k] = true
				}
			}
		}
	}
	return kinds
}

func sortedKeys(m openapi3.Schemas) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Level is what a set of changes does to the version: major, minor, patch, or "" (none).
func Level(changes []Change, changed bool) string {
	switch {
	case hasLevel(changes, "breaking"):
		return "major"
	case len(changes) > 0:
		return "minor"
	case changed:
		return "patch"
	}
	return ""
}

func hasLevel(changes []Change, level string) bool {
	for _, c := range changes {
		if c.Level == level {
			return true
		}
	}
	return false
}

// Semver is a semantic version.
type Semver struct{ Major, Minor, Patch int }

func (v Semver) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Bump is v after a change of level.
func (v Semver) Bump(level string) Semver {
	switch level {
	case "major":
		return Semver{v.Major + 1, 0, 0}
	case "minor":
		return Semver{v.Major, v.Minor + 1, 0}
	case "patch":
		return Semver{v.Major, v.Minor, v.Patch + 1}
	}
	return v
}

// Parse reads x.y.z.
func Parse(s string) (Semver, bool) {
	p := strings.Split(s, ".")
	if len(p) != 3 {
		return Semver{}, false
	}
	var n [3]int
	for i, x := range p {
		v, err := strconv.Atoi(x)
		if err != nil || v < 0 || strconv.Itoa(v) != x {
			return Semver{}, false
		}
		n[i] = v
	}
	return Semver{n[0], n[1], n[2]}, true
}

// Version is one published version of a dataset's description.
type Version struct {
	Version       string     `json:"version"`
	SchemaVersion int        `json:"schema_version"`
	Level         string     `json:"level"` // initial, major, minor, patch
	Status        string     `json:"status"`
	ReleasedAt    time.Time  `json:"released_at"`
	DeprecatedAt  *time.Time `json:"deprecated_at"`
	SunsetAt      *time.Time `json:"sunset_at"`
	Changes       []Change   `json:"changes"`
}

// SunsetAfter is how long a version lives after a breaking version supersedes it.
const SunsetAfter = 180 * 24 * time.Hour

// State is the description at one schema version, and when that version was released.
type State struct {
	SchemaVersion int
	ReleasedAt    time.Time
	Doc           *openapi3.T // compared with its neighbours' (nil when there are none)
	// Notes are changes the description does not show (the records' key moved, a
	// relationship went), listed with the compared ones and weighed the same way.
	Notes []Change
}

// History numbers states (in schema-version order) from 1.0.0 and gives each its status at
// now: the last is current; the others are deprecated from their successor's release and
// sunset SunsetAfter the release of the first major version after them (never, when no
// breaking version followed: the current one still serves their clients).
func History(states []State, now time.Time) ([]Version, error) {
	out := make([]Version, 0, len(states))
	v := Semver{1, 0, 0}
	for i, s := range states {
		ver := Version{SchemaVersion: s.SchemaVersion, Level: "initial", ReleasedAt: s.ReleasedAt, Changes: []Change{}}
		if i > 0 {
			changes, changed, err := Compare(states[i-1].Doc, s.Doc)
			if err != nil {
				return nil, err
			}
			changes = append(changes, s.Notes...)
			ver.Level = Level(changes, changed)
			if ver.Level == "" {
				ver.Level = "patch" // a recorded change that changed nothing visible still releases
			}
			v = v.Bump(ver.Level)
			ver.Changes = changes
		}
		ver.Version = v.String()
		out = append(out, ver)
	}
	setStatuses(out, now)
	return out, nil
}

// setStatuses gives each of versions its status at now (see History).
func setStatuses(out []Version, now time.Time) {
	for i := range out {
		out[i].Status, out[i].DeprecatedAt, out[i].SunsetAt = "", nil, nil
		if i == len(out)-1 {
			out[i].Status = "current"
			continue
		}
		dep := out[i+1].ReleasedAt
		out[i].DeprecatedAt = &dep
		out[i].Status = "deprecated"
		for j := i + 1; j < len(out); j++ {
			if out[j].Level == "major" {
				sunset := out[j].ReleasedAt.Add(SunsetAfter)
				out[i].SunsetAt = &sunset
				if !now.Before(sunset) {
					out[i].Status = "sunset"
				}
				break
			}
		}
	}
}

// AsOf is versions as they stood when version v was released: v and those before it, with
// their statuses then (v current). A released description lists these, so that it never
// changes when later versions are released; nil when there is no version v.
func AsOf(versions []Version, v string) []Version {
	for i := range versions {
		if versions[i].Version == v {
			out := slices.Clone(versions[:i+1])
			setStatuses(out, versions[i].ReleasedAt)
			return out
		}
	}
	return nil
}

// Find is the version named v, or nil.
func Find(versions []Version, v string) *Version {
	for i := range versions {
		if versions[i].Version == v {
			return &versions[i]
		}
	}
	return nil
}

// Between is every change from version from (exclusive) to version to (inclusive), in
// order; from must come first.
func Between(versions []Version, from, to string) ([]Change, error) {
	fi, ti := -1, -1
	for i, v := range versions {
		if v.Version == from {
			fi = i
		}
		if v.Version == to {
			ti = i
		}
	}
	if fi < 0 || ti < 0 {
		return nil, fmt.Errorf("unknown version")
	}
	if fi > ti {
		return nil, fmt.Errorf("from comes after to")
	}
	var out []Change
	for _, v := range versions[fi+1 : ti+1] {
		out = append(out, v.Changes...)
	}
	return out, nil
}
