// Package descriptions renders a dataset's description (templates/specgen) with what it needs
// from the store (relationships, sample values, schema history), numbers its versions
// (templates/apiversions), and keeps the result per dataset and schema state: the record API
// is validated against it and served from it, and the description endpoints publish it.
package descriptions

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/records"
	"dataplatform/templates/apiversions"
	"dataplatform/templates/specgen"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/sync/singleflight"
)

// Description is a dataset's rendered description with what serving it needs.
type Description struct {
	LinksSQL string // PostgreSQL builds each listed record's _links with it ("": the handler does)
	key      string
	base     string    // the dataset's schema version and update time
	checked  time.Time // when the relationships were last compared
	Singular string    // the record schemas are <singular>, <singular>Create, ...
	Doc      *openapi3.T
	size     int // of the rendered text: the cache's measure (cost)
	jsonOnce sync.Once
	json     []byte
	jsonErr  error
	ETag     string
	Table    *records.Table
	Links    []records.Link
	Versions []apiversions.Version    // every published version, oldest first
	inputs   map[string]specgen.Input // what renders each past version
	pastMu   sync.Mutex
	past     map[string][]byte // past versions rendered so far
	derived  sync.Map          // what users make of the description (Derived)
}

// Derived is what build makes of the description, made once per key and kept as long as
// the description is (the server's validation routes of its operations, say).
func (d *Description) Derived(key any, build func() any) any {
	if v, ok := d.derived.Load(key); ok {
		return v
	}
	v, _ := d.derived.LoadOrStore(key, build())
	return v
}

// connectedLinks are the links of a connected database's table: its foreign keys to the
// dataset's other tables (many-to-one) and theirs to it (one-to-many).
func connectedLinks(d *store.Dataset, served datasets.TableDef, tables []datasets.TableDef, rels []store.Relationship) []records.Link {
	keyOf := map[string]string{}
	for _, t := range tables {
		keyOf[t.Name] = records.NewTable(t).Key()
	}
	var out []records.Link
	for _, r := range rels {
		if r.FromDataset != d.ID || r.ToDataset != d.ID {
			continue
		}
		if r.FromTable == served.Name {
			name := strings.TrimSuffix(strings.TrimSuffix(r.FromColumn, "_id"), "id")
			if name == "" || name == r.FromColumn {
				name = r.FromColumn + "_ref"
			}
			out = append(out, records.Link{Name: name, Dataset: d.ID, Table: r.ToTable, Column: r.FromColumn, Target: r.ToColumn,
				Many: keyOf[r.ToTable] != r.ToColumn, ToKey: keyOf[r.ToTable] == r.ToColumn})
		}
		if r.ToTable == served.Name {
			out = append(out, records.Link{Name: r.FromTable, Dataset: d.ID, Table: r.FromTable, Column: r.ToColumn, Target: r.FromColumn, Many: true})
		}
	}
	return out
}

// relCheck is how long a description's relationship links are trusted without a look.
const relCheck = 5 * time.Second

// The descriptions kept in memory are bounded by an estimate of their size
// (DP_DESCRIPTION_CACHE_BYTES) and by count: a parsed document (kin-openapi's, its leaf
// schemas shared with other documents) holds about five times the bytes of the text it was
// parsed from, a few hundred KB each; by count alone a busy process kept gigabytes. The
// count allows one per minDescriptionCost of the budget.
const (
	parsedPerByte      = 5
	minDescriptionCost = 128 << 10
)

// cost is the estimated memory of a cached description.
func (d *Description) cost() int { return d.size * (1 + parsedPerByte) }

// JSON is the description as JSON, encoded when first asked for: record requests, which
// are validated against Doc, never ask.
func (d *Description) JSON() ([]byte, error) {
	d.jsonOnce.Do(func() { d.json, d.jsonErr = json.Marshal(d.Doc) })
	return d.json, d.jsonErr
}

// Cache renders and caches datasets' descriptions, one per dataset and schema state.
type Cache struct {
	store *store.Store
	urls  URLs
	clock func() time.Time
	mu    sync.Mutex
	cache map[string]*Description
	bytes int // the cached descriptions' estimated cost
	max   int // the budget of bytes
	// building renders each description once however many requests ask for it at once (a
	// dataset's first requests, or thousands of change streams opening together); they
	// share the one made, and so its table.
	building singleflight.Group
}

// URLs are the addresses a description names: the production and staging servers and the
// identity provider's (OAuth flows; "" for none).
type URLs struct{ Production, Staging, Auth string }

// New is an empty cache over st that keeps about maxBytes of descriptions.
func New(st *store.Store, urls URLs, clock func() time.Time, maxBytes int) *Cache {
	if urls.Staging == "" {
		urls.Staging = urls.Production
	}
	return &Cache{store: st, urls: urls, clock: clock, cache: map[string]*Description{}, max: maxBytes}
}

// NotServed is the answer to a record API operation the description does not have: 405
// with the reason (a connected table without a key, or read-only, or without a change stream).
func (d *Description) NotServed(path, method string) error {
	t := d.Table
	reason := "this operation is not part of the dataset's API"
	switch {
	case strings.HasSuffix(path, "/stream") || strings.HasSuffix(path, "/ws"):
		if !t.System() {
			reason = "a connected database's tables have no change stream (changes made in the database itself are not seen as they happen); poll the list instead"
		}
	case strings.HasSuffix(path, "/{id}") && t.Key() == "":
		reason = "the table " + t.Name + " has no single-column primary key: its records are listed, queried, aggregated and exported, not addressed one by one"
	case method != http.MethodGet && !t.Writable():
		reason = "the table " + t.Name + " is read-only through the record API (a MySQL connection, or no single-column primary key)"
	}
	return &RequestError{NotServed: true, Message: reason, Details: map[string]any{"method": method, "table": t.Name}}
}

// RequestError is a request that names what a dataset's description does not have: a table or
// a version (a validation error of Field, with Code), or an operation (NotServed: 405). The
// server answers it in the API's error shape.
type RequestError struct {
	NotServed            bool
	Field, Code, Message string
	Details              map[string]any
}

func (e *RequestError) Error() string { return e.Message }

// pickTable is the dataset's table named table ("": the first), or a 400 naming the others.
func pickTable(tables []datasets.TableDef, table string) (datasets.TableDef, error) {
	if table == "" {
		return tables[0], nil
	}
	var names []string
	for _, t := range tables {
		if t.Name == table && t.Foreign {
			return t, nil
		}
		names = append(names, t.Name)
	}
	if !tables[0].Foreign {
		return datasets.TableDef{}, &RequestError{Field: "query.table", Code: "not_found", Message: "an uploaded dataset has one table: leave table out"}
	}
	return datasets.TableDef{}, &RequestError{Field: "query.table", Code: "not_found",
		Message: fmt.Sprintf("no table %q; the dataset's tables are: %s", table, strings.Join(names, ", "))}
}

// Describe is the description of a dataset's table (table "": the first), rendered or
// cached.
func (ds *Cache) Describe(ctx context.Context, d *store.Dataset, table string) (*Description, error) {
	base := strconv.Itoa(d.SchemaVersion) + "|" + strconv.FormatInt(d.UpdatedAt.UnixNano(), 10)
	cacheKey := d.ID + "/" + table // as asked: "" is the default table
	// Relationships change without the dataset changing (another dataset starts to refer to
	// it): they are looked at again when the cached description is older than relCheck, by
	// one request while the others go on with it.
	ds.mu.Lock()
	cached := ds.cache[cacheKey]
	if cached != nil && cached.base == base && time.Since(cached.checked) < relCheck {
		ds.mu.Unlock()
		return cached, nil
	}
	if cached != nil && cached.base == base {
		cached.checked = time.Now()
	}
	ds.mu.Unlock()
	// Made on a context no one caller's end cancels: the others wait for the same result.
	v, err, _ := ds.building.Do(cacheKey+"|"+base, func() (any, error) {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), describeWait)
		defer cancel()
		return ds.describe(bctx, d, table, cacheKey, base)
	})
	if err != nil {
		return nil, err
	}
	return v.(*Description), nil
}

// describeWait bounds the rendering of a description that requests wait for together.
const describeWait = 30 * time.Second

// describe is Describe's rendering, or the cached description when its relationships have
// not changed.
func (ds *Cache) describe(ctx context.Context, d *store.Dataset, table, cacheKey, base string) (*Description, error) {
	ds.mu.Lock()
	cached := ds.cache[cacheKey]
	ds.mu.Unlock()
	tables, err := datasets.Tables(d)
	if err != nil {
		return nil, err
	}
	served, err := pickTable(tables, table)
	if err != nil {
		return nil, err
	}
	rels, err := store.Relationships(ctx, ds.store.DB, d.ID)
	if err != nil {
		return nil, err
	}
	key := base + "|" + relKey(rels)
	if cached != nil && cached.key == key {
		ds.mu.Lock()
		cached.checked = time.Now()
		ds.mu.Unlock()
		return cached, nil
	}
	in := specgen.Input{DatasetID: d.ID, Name: d.Name, Description: description(d), SchemaVersion: d.SchemaVersion,
		Table: served, ProductionURL: ds.urls.Production, StagingURL: ds.urls.Staging, GeneratedAt: d.UpdatedAt}
	if served.Foreign { // a connected database's table: its operations are named after it
		in.Name = served.Name
		for _, t := range tables {
			in.Tables = append(in.Tables, t.Name)
		}
	}
	desc := &Description{key: key, base: base, checked: time.Now(), Table: records.NewTable(served), Singular: specgen.NamesOf(in.Name).Singular}
	if served.Foreign {
		desc.Links = connectedLinks(d, served, tables, rels)
		rels = nil // the rules below are those of uploaded datasets
	}
	desc.Links = append(desc.Links, uploadedLinks(d.ID, rels)...)
	for _, l := range desc.Links {
		in.Links = append(in.Links, specgen.Link{Name: l.Name, Many: l.Many, Dataset: l.Dataset, LocalKey: l.Column, ForeignKey: l.Target, Table: l.Table})
	}
	if in.ManyToMany, err = ds.manyToMany(ctx, d.ID, rels); err != nil {
		return nil, err
	}
	if in.Samples, err = ds.samples(ctx, d.ID, served.Name); err != nil {
		return nil, err
	}
	in.AuthURL = ds.urls.Auth
	desc.LinksSQL = records.LinksSQL(d.ID, desc.Table, desc.Links)
	if desc.Versions, desc.inputs, err = ds.history(ctx, d, in); err != nil {
		return nil, err
	}
	// The current version is rendered as it was released, and as it will be once it is an
	// earlier one (Past): a released document never changes.
	cur := desc.inputs[desc.Current()]
	cur.APIVersions = ds.Listed(d.ID, apiversions.AsOf(desc.Versions, desc.Current()))
	if desc.Doc, desc.size, err = specgen.RenderDoc(ctx, cur); err != nil {
		return nil, err
	}
	desc.ETag = fmt.Sprintf(`"%s-%d-%d"`, d.ID, d.SchemaVersion, d.UpdatedAt.UnixNano())
	if served.Foreign {
		desc.ETag = fmt.Sprintf(`"%s-%s-%d-%d"`, d.ID, served.Name, d.SchemaVersion, d.UpdatedAt.UnixNano())
	}
	ds.remember(cacheKey, desc)
	return desc, nil
}

// uploadedLinks are the links of an uploaded dataset's relationships: this.col → other.key,
// the one record it points at; other.col → this.key, the records pointing here, named after
// the other dataset, and by the role (its column) too when several of its columns point here
// (rentals_by_start_station, rentals_by_end_station).
func uploadedLinks(datasetID string, rels []store.Relationship) []records.Link {
	var links []records.Link
	pointing := map[string]int{}
	for _, r := range rels {
		if r.FromDataset != datasetID {
			pointing[r.FromDataset]++
		}
	}
	for _, r := range rels {
		if r.FromDataset == datasetID {
			l := records.Link{Name: strings.TrimSuffix(strings.TrimSuffix(r.FromColumn, "_id"), "id"), Dataset: r.ToDataset, Column: r.FromColumn, Target: r.ToColumn, ToKey: r.ToKey}
			if l.Name == "" || l.Name == r.FromColumn {
				l.Name = r.FromColumn + "_ref"
			}
			links = append(links, l)
		} else {
			name := ingest.Identifiers([]string{r.FromName})[0]
			if pointing[r.FromDataset] > 1 {
				name += "_by_" + r.FromColumn
			}
			links = append(links, records.Link{Name: name, Dataset: r.FromDataset, Column: r.ToColumn, Target: r.FromColumn, Many: true})
		}
	}
	return links
}

// manyToMany are the dataset's many-to-many relationships: a dataset whose records point here
// and at another dataset is a junction.
func (ds *Cache) manyToMany(ctx context.Context, datasetID string, rels []store.Relationship) ([]specgen.ManyToMany, error) {
	var out []specgen.ManyToMany
	for _, r := range rels {
		if r.ToDataset != datasetID || r.FromDataset == datasetID {
			continue
		}
		jrels, err := store.Relationships(ctx, ds.store.DB, r.FromDataset)
		if err != nil {
			return nil, err
		}
		for _, o := range jrels {
			if o.FromDataset == r.FromDataset && o.ToDataset != datasetID && o.ToDataset != r.FromDataset {
				out = append(out, specgen.ManyToMany{Target: o.ToDataset, TargetName: o.ToName, Junction: r.FromDataset,
					JunctionName: r.FromName, LocalKey: r.FromColumn, ForeignKey: o.FromColumn})
			}
		}
	}
	return out, nil
}

// remember caches desc under key; the cache is bounded by count and estimated bytes: it
// drops others at random (map order is random enough) until desc fits.
func (ds *Cache) remember(key string, desc *Description) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if old := ds.cache[key]; old != nil {
		ds.bytes -= old.cost()
		delete(ds.cache, key)
	}
	for len(ds.cache) > 0 && (len(ds.cache) >= ds.max/minDescriptionCost || ds.bytes+desc.cost() > ds.max) {
		for k, d := range ds.cache {
			ds.bytes -= d.cost()
			delete(ds.cache, k)
			break
		}
	}
	ds.cache[key] = desc
	ds.bytes += desc.cost()
}

func relKey(rels []store.Relationship) string {
	var b strings.Builder
	for _, r := range rels {
		b.WriteString(r.FromDataset + r.FromColumn + r.ToDataset + r.ToColumn + r.FromName + ";")
	}
	return b.String()
}

// SelfURL is a record's address; a connected database's table is named in it.
func (d *Description) SelfURL(datasetID, key string) string {
	self := records.Link{Dataset: datasetID, ToKey: true}
	if d.Table.Foreign {
		self.Table = d.Table.Name
	}
	return self.URL(key)
}

// history renders the dataset's description at each of its schema versions (the columns
// before the first change, then after each) and numbers them (apiversions). in is the
// current description's input; past ones differ in their columns. It also keeps, per past
// version, the input that renders it.
func (ds *Cache) history(ctx context.Context, d *store.Dataset, in specgen.Input) ([]apiversions.Version, map[string]specgen.Input, error) {
	changes, err := store.SchemaChanges(ctx, ds.store.DB, d.ID)
	if err != nil {
		return nil, nil, err
	}
	inputs := []specgen.Input{}
	released := []store.SchemaChange{}
	first := in
	first.SchemaVersion, first.GeneratedAt = 1, d.CreatedAt
	namedThen(in, &first, changes)
	keep := true
	if len(changes) > 0 {
		var err error
		if keep, err = stateAt(in, changes[0].ColumnsBefore, &first); err != nil {
			return nil, nil, err
		}
		first.SchemaVersion = changes[0].SchemaVersion - 1
	}
	if keep {
		inputs = append(inputs, first)
		released = append(released, store.SchemaChange{CreatedAt: d.CreatedAt, SchemaVersion: first.SchemaVersion})
	}
	for i, c := range changes {
		x := in
		if i < len(changes)-1 {
			ok, err := stateAt(in, c.ColumnsAfter, &x)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				continue
			}
		}
		namedThen(in, &x, changes[i+1:])
		if in.Table.Foreign && len(inputs) > 0 && reflect.DeepEqual(inputs[len(inputs)-1].Table, x.Table) &&
			inputs[len(inputs)-1].Description == x.Description {
			continue // another table of the database changed: this one's description did not
		}
		x.SchemaVersion, x.GeneratedAt = c.SchemaVersion, c.CreatedAt
		inputs = append(inputs, x)
		released = append(released, c)
	}
	states, err := renderStates(ctx, inputs, released)
	if err != nil {
		return nil, nil, err
	}
	versions, err := apiversions.History(states, ds.clock().UTC().Truncate(time.Microsecond))
	if err != nil {
		return nil, nil, err
	}
	byVersion := map[string]specgen.Input{}
	for i, v := range versions {
		x := inputs[i]
		x.Version = v.Version
		byVersion[v.Version] = x
	}
	return versions, byVersion, nil
}

// stateAt sets x's table to the served table as it was in raw: an uploaded dataset's changes
// keep its columns; a connected dataset's keep all its tables (a table that did not exist yet
// has no state: false).
func stateAt(in specgen.Input, raw string, x *specgen.Input) (bool, error) {
	if !in.Table.Foreign {
		var cols []ingest.Column // a new slice: x shares in's
		err := json.Unmarshal([]byte(raw), &cols)
		x.Table.Columns = cols
		return true, err
	}
	var ts []datasets.TableDef
	if err := json.Unmarshal([]byte(raw), &ts); err != nil {
		return false, err
	}
	for _, t := range ts {
		if t.Name == in.Table.Name {
			x.Table = t
			return true, nil
		}
	}
	return false, nil
}

// namedThen gives a state the name and description in force then: those a later rename
// replaced (its "before"), else the current ones.
func namedThen(in specgen.Input, x *specgen.Input, later []store.SchemaChange) {
	for _, c := range later {
		if r := renameOf(c.Changes); r != nil {
			if !in.Table.Foreign { // a connected table's operations are named after the table
				x.Name = r.Name.Before
			}
			x.Description = r.Description.Before
			return
		}
	}
}

// renderStates renders each state of the description, released with its change, for
// apiversions to number; a rename is a breaking change of its own. A single state is
// compared with nothing, so it is not rendered: most datasets have one, and a render is
// most of a cold description's cost.
func renderStates(ctx context.Context, inputs []specgen.Input, released []store.SchemaChange) ([]apiversions.State, error) {
	states := make([]apiversions.State, len(inputs))
	for i, x := range inputs {
		states[i] = apiversions.State{SchemaVersion: released[i].SchemaVersion, ReleasedAt: released[i].CreatedAt,
			Notes: notes(released[i].Changes)}
		if len(inputs) > 1 {
			x.Version = "0.0.0" // the same in all: the number is what is being worked out
			doc, _, err := specgen.RenderDoc(ctx, x)
			if err != nil {
				return nil, err
			}
			states[i].Doc = doc
		}
		if i > 0 && specgen.NamesOf(inputs[i-1].Name) != specgen.NamesOf(x.Name) {
			states[i].Notes = append(states[i].Notes, apiversions.Change{Level: "breaking", ID: "dataset-renamed",
				Text: "the dataset was renamed from " + inputs[i-1].Name + " to " + x.Name + ": operation ids and schema names follow the new name " +
					"(list" + specgen.NamesOf(inputs[i-1].Name).Plural + " is now list" + specgen.NamesOf(x.Name).Plural + "), so generated clients' methods and types are renamed"})
		}
	}
	return states, nil
}

// Rename is a "rename_dataset" schema change: the dataset's name and description before and
// after it (unchanged ones are the same on both sides). It changes no columns; it is recorded
// so that earlier versions keep rendering with the name they had.
type Rename struct {
	Op          string `json:"op"` // rename_dataset
	Name        Texts  `json:"name"`
	Description Texts  `json:"description"`
}

// Texts is a value before and after a change.
type Texts struct {
	Before string `json:"before"`
	After  string `json:"after"`
}

// RenameChanges is the changes JSON of a schema change recording r.
func RenameChanges(r Rename) string {
	r.Op = "rename_dataset"
	b, _ := json.Marshal([]Rename{r})
	return string(b)
}

// renameOf is the rename a schema change's changes record, or nil.
func renameOf(changes string) *Rename {
	if !strings.Contains(changes, `"rename_dataset"`) {
		return nil
	}
	var ops []Rename
	if json.Unmarshal([]byte(changes), &ops) != nil {
		return nil
	}
	for i := range ops {
		if ops[i].Op == "rename_dataset" {
			return &ops[i]
		}
	}
	return nil
}

// notes are what a schema change's operations do that a description of the columns does not
// show: a new key (the records' addresses change) and relationships added or removed.
func notes(changes string) []apiversions.Change {
	var ops []struct {
		Op         string `json:"op"`
		Column     any    `json:"column"`
		Reason     string `json:"reason"`
		References *struct {
			DatasetID string `json:"dataset_id"`
			Column    string `json:"column"`
		} `json:"references"`
	}
	if changes == "" || json.Unmarshal([]byte(changes), &ops) != nil {
		return nil
	}
	var out []apiversions.Change
	for _, o := range ops {
		col, _ := o.Column.(string)
		to := ""
		if o.References != nil {
			to = " to " + o.References.DatasetID
			if o.References.Column != "" {
				to += "." + o.References.Column
			}
		}
		switch o.Op {
		case "set_primary_key":
			out = append(out, apiversions.Change{Level: "breaking", ID: "primary-key-changed", Path: "/api/v1/datasets/{dataset_id}/data/{id}",
				Text: "records are keyed by " + col + ": their addresses (and links to them) change"})
		case "mark_key":
			out = append(out, apiversions.Change{Level: "info", ID: "primary-key-marked",
				Text: col + " holds the file's own ids and is the records' key: a record may be created with one"})
		case "add_relationship":
			out = append(out, apiversions.Change{Level: "info", ID: "relationship-added", Text: "the relationship from " + col + to + " was declared"})
		case "drop_relationship":
			text := "the relationship from " + col + to + " was removed"
			if o.Reason != "" {
				text += ": " + o.Reason
			}
			out = append(out, apiversions.Change{Level: "warning", ID: "relationship-removed", Text: text})
		}
	}
	return out
}

// Listed is x-api-versions: every version with its status and description URL.
func (ds *Cache) Listed(datasetID string, versions []apiversions.Version) []specgen.APIVersion {
	out := make([]specgen.APIVersion, len(versions))
	for i, v := range versions {
		out[i] = specgen.APIVersion{Version: v.Version, Status: v.Status, ReleasedAt: v.ReleasedAt.UTC().Format("2006-01-02T15:04:05Z"),
			URL: ds.urls.Production + "/api/v1/datasets/" + datasetID + "/openapi.json?version=" + v.Version}
		if v.SunsetAt != nil {
			out[i].SunsetAt = v.SunsetAt.UTC().Format("2006-01-02T15:04:05Z")
		}
	}
	return out
}

// VersionHeaders are the response headers of a record request made against version (the
// client's X-API-Version): Deprecation (RFC 9745), Sunset (RFC 8594) and a successor-version
// link when it is not the current one; none when version is empty or current. An unknown
// version is a validation error.
func (d *Description) VersionHeaders(datasetID, baseURL, version string) (map[string]string, error) {
	if version == "" {
		return nil, nil
	}
	v := apiversions.Find(d.Versions, version)
	if v == nil {
		known := make([]string, len(d.Versions))
		for i, x := range d.Versions {
			known[i] = x.Version
		}
		return nil, &RequestError{Field: "header.X-API-Version", Code: "enum", Message: "no version " + version + " of this dataset's API; versions: " + strings.Join(known, ", ")}
	}
	if v.DeprecatedAt == nil {
		return nil, nil
	}
	h := map[string]string{
		"Deprecation": fmt.Sprintf("@%d", v.DeprecatedAt.Unix()),
		"Link":        fmt.Sprintf(`<%s/api/v1/datasets/%s/openapi.json>; rel="successor-version"`, baseURL, datasetID),
	}
	if v.SunsetAt != nil {
		h["Sunset"] = v.SunsetAt.UTC().Format(http.TimeFormat)
	}
	return h, nil
}

// samples are the sample values of a table's columns from the dataset's last analysis, as
// text (the description marks columns that hold personal data with them).
func (ds *Cache) samples(ctx context.Context, datasetID, table string) (map[string][]string, error) {
	raw, err := store.DatasetStatistics(ctx, ds.store.DB, datasetID)
	if err != nil {
		return nil, err
	}
	var st datasets.Statistics
	if json.Unmarshal([]byte(raw), &st) != nil || st.Tables[table] == nil {
		return nil, nil
	}
	out := map[string][]string{}
	for col, cs := range st.Tables[table].Columns {
		for _, v := range cs.SampleValues {
			if s, ok := v.(string); ok {
				out[col] = append(out[col], s)
			}
		}
	}
	return out, nil
}

// description is the dataset's description ("" for none).
func description(d *store.Dataset) string {
	if d.Description == nil {
		return ""
	}
	return *d.Description
}

// Current is the number of the description's current version.
func (d *Description) Current() string { return d.Versions[len(d.Versions)-1].Version }

// Past is the description at an earlier version, rendered once and then kept with desc; false
// when desc has no such version.
func (ds *Cache) Past(ctx context.Context, desc *Description, datasetID, version string) ([]byte, bool, error) {
	in, ok := desc.inputs[version]
	if !ok {
		return nil, false, nil
	}
	desc.pastMu.Lock()
	defer desc.pastMu.Unlock()
	if raw, ok := desc.past[version]; ok {
		return raw, true, nil
	}
	in.APIVersions = ds.Listed(datasetID, apiversions.AsOf(desc.Versions, version))
	_, raw, err := specgen.Render(ctx, in)
	if err != nil {
		return nil, true, err
	}
	if desc.past == nil {
		desc.past = map[string][]byte{}
	}
	desc.past[version] = raw
	return raw, true, nil
}

// At is the description at version as a document and its JSON (the current one as cached);
// false when desc has no such version.
func (ds *Cache) At(ctx context.Context, desc *Description, datasetID, version string) (*openapi3.T, []byte, bool, error) {
	if version == desc.Current() {
		raw, err := desc.JSON()
		return desc.Doc, raw, true, err
	}
	in, ok := desc.inputs[version]
	if !ok {
		return nil, nil, false, nil
	}
	in.APIVersions = ds.Listed(datasetID, apiversions.AsOf(desc.Versions, version))
	doc, raw, err := specgen.Render(ctx, in)
	return doc, raw, true, err
}

// WithColumns renders the current description with the served table's columns replaced, as the
// next schema version would be: a change is checked against it before it is made.
func (d *Description) WithColumns(ctx context.Context, cols []ingest.Column) (*openapi3.T, error) {
	in := d.inputs[d.Current()]
	in.Table.Columns, in.Version, in.SchemaVersion = cols, "0.0.0", in.SchemaVersion+1
	doc, _, err := specgen.RenderDoc(ctx, in)
	return doc, err
}
