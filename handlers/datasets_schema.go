package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"
	"dataplatform/store/views"
	"dataplatform/templates/specgen"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// columnOf turns a column declaration of a request into a dataset column.
func columnOf(d api.ColumnDefinition) ingest.Column {
	c := ingest.Column{Name: d.Name, Original: deref(d.Source), Type: ingest.Type(d.Type), Nullable: !deref(d.Required),
		Description: deref(d.Description)}
	if c.Original == "" {
		c.Original = d.Name
	}
	k := ingest.Constraints{Unique: deref(d.Unique), Pattern: deref(d.Pattern), Minimum: d.Minimum, Maximum: d.Maximum,
		MinLength: d.MinLength, MaxLength: d.MaxLength, Format: string(deref(d.Format))}
	if d.Enum != nil {
		k.Enum = *d.Enum
	}
	if d.Default != nil {
		k.Default, _ = json.Marshal(d.Default)
	}
	if !k.Empty() {
		c.Constraints = &k
	}
	return c
}

var systemColumns = []string{"id", "created_at", "updated_at", "deleted_at", "version"}

// checkColumn finds what is wrong with a column declaration: a system name, constraints its
// type cannot have, a default its type or constraints refuse, a regular expression
// PostgreSQL or the API description cannot compile. field prefixes the detail's field
// names; err is a failure of the database itself. q is not the request's transaction: a
// regular expression that fails to compile would abort it.
func checkColumn(ctx context.Context, q sqlx.QueryerContext, c ingest.Column, field string) ([]apierr.FieldError, error) {
	var errs []apierr.FieldError
	bad := func(f, code, msg string) {
		errs = append(errs, apierr.FieldError{Field: field + f, Code: code, Message: msg})
	}
	if slices.Contains(systemColumns, c.Name) {
		bad(".name", "reserved", c.Name+" is a system column of every dataset")
	}
	if s := c.Semantics; s != nil && s.Role != "" && !ingest.Role(s.Role).Fits(c.Type) {
		bad(".role", "not_applicable", fmt.Sprintf("a %s column cannot have the role %s (amount, value and count are numbers, time a date or a timestamp, text text)",
			c.Type, s.Role))
	}
	k := c.Constraints
	if k == nil {
		return errs, nil
	}
	text := c.Type == ingest.Text
	num := c.Type == ingest.Integer || c.Type == ingest.BigInt || c.Type == ingest.Numeric
	for _, x := range []struct {
		name string
		set  bool
		ok   bool
		want string
	}{
		{"enum", k.Enum != nil, text, "text"}, {"format", k.Format != "", text || ingest.Type(map[string]string{"uuid": "uuid", "date": "date", "date-time": "timestamptz"}[k.Format]) == c.Type, "text"},
		{"pattern", k.Pattern != "", text, "text"}, {"min_length", k.MinLength != nil, text, "text"},
		{"max_length", k.MaxLength != nil, text, "text"}, {"minimum", k.Minimum != nil, num, "numeric"},
		{"maximum", k.Maximum != nil, num, "numeric"},
	} {
		if x.set && !x.ok {
			bad("."+x.name, "not_applicable", fmt.Sprintf("%s applies to %s columns, not %s", x.name, x.want, c.Type))
		}
	}
	if k.MinLength != nil && k.MaxLength != nil && *k.MinLength > *k.MaxLength {
		bad(".min_length", "range", "min_length is greater than max_length")
	}
	if k.Minimum != nil && k.Maximum != nil && *k.Minimum > *k.Maximum {
		bad(".minimum", "range", "minimum is greater than maximum")
	}
	for _, x := range []*float64{k.Minimum, k.Maximum} {
		if x != nil && (math.IsInf(*x, 0) || math.IsNaN(*x)) {
			bad(".minimum", "range", "bounds must be finite")
		}
	}
	if v := c.DefaultValue(); v != nil {
		s, _, err := c.Text(v)
		switch {
		case err != nil:
			bad(".default", "type", "the default "+err.Error())
		case k.Enum != nil && !slices.Contains(k.Enum, s):
			bad(".default", "enum", "the default is not one of the enum values")
		case k.MaxLength != nil && len([]rune(s)) > *k.MaxLength:
			bad(".default", "max_length", "the default is longer than max_length")
		}
	}
	if k.Pattern != "" {
		msg, err := datasets.PatternError(ctx, q, k.Pattern)
		if err != nil {
			return nil, err
		} else if msg != "" {
			bad(".pattern", "pattern", "not a valid regular expression: "+msg)
		} else if msg := specgen.PatternError(ctx, k.Pattern); msg != "" {
			bad(".pattern", "pattern", "a pattern the API description cannot express: "+msg)
		}
	}
	return errs, nil
}

// declaredSchema checks the columns of a create request.
func declaredSchema(ctx context.Context, q sqlx.QueryerContext, defs []api.ColumnDefinition) ([]ingest.Column, error) {
	var errs []apierr.FieldError
	cols := make([]ingest.Column, len(defs))
	seen := map[string]bool{}
	for i, d := range defs {
		cols[i] = columnOf(d)
		field := fmt.Sprintf("body.schema.columns[%d]", i)
		if seen[d.Name] {
			errs = append(errs, apierr.FieldError{Field: field + ".name", Code: "duplicate", Message: d.Name + " is declared twice"})
		}
		seen[d.Name] = true
		bad, err := checkColumn(ctx, q, cols[i], field)
		if err != nil {
			return nil, err
		}
		errs = append(errs, bad...)
	}
	if len(errs) > 0 {
		return nil, apierr.Validation(errs...)
	}
	return cols, nil
}

// active refuses work on a dataset that is not active.
func active(d *store.Dataset, what string) error {
	if d.Status != "active" {
		return apierr.Conflict("status", "the dataset is "+d.Status+"; "+what+" once it is active")
	}
	return nil
}

// serving refuses reading the rows of a dataset that does not serve them (store.Dataset.Serving):
// before its first load has finished, or after it failed. An import in progress does not stop
// readers: they see the rows as they were until it commits.
func serving(d *store.Dataset, what string) error {
	if !d.Serving() {
		return active(d, what)
	}
	return nil
}

func (h *Datasets) GetDatasetSchema(ctx context.Context, req api.GetDatasetSchemaRequestObject) (api.GetDatasetSchemaResponseObject, error) {
	d, tables, err := h.activeTables(ctx, req.ProjectId, req.DatasetId, "datasets:read", "its schema can be read")
	if err != nil {
		return nil, err
	}
	var st datasets.Statistics
	if err := json.Unmarshal([]byte(d.Statistics), &st); err != nil {
		return nil, err
	}
	out := api.GetDatasetSchema200JSONResponse{DatasetId: d.ID, SchemaVersion: &d.SchemaVersion,
		Relationships: []api.Relationship{}, Tables: []api.SchemaTable{}}
	out.Metadata.LastAnalyzed, out.Metadata.AnalysisVersion, out.Metadata.VectorCount = d.AnalyzedAt, d.AnalysisVersion, &d.VectorCount
	rels, err := store.Relationships(ctx, h.Store.DB, d.ID)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		ts := st.Tables[t.Name]
		if ts == nil {
			ts = &datasets.TableStats{}
		}
		table := api.SchemaTable{Name: t.Name, RowCount: ts.RowCount, Type: api.SchemaTableTypeTable, Columns: []api.SchemaColumn{}}
		if t.Foreign {
			table.Type = api.SchemaTableTypeForeignTable
		} else {
			table.Description = d.Description
		}
		column := func(name, typ string, nullable bool) api.SchemaColumn {
			sc := api.SchemaColumn{Name: name, Type: typ, Nullable: nullable, SampleValues: []interface{}{},
				IsPrimaryKey: slices.Contains(t.PrimaryKey, name)}
			if s := ts.Columns[name]; s != nil {
				sc.SampleValues = s.SampleValues
				sc.Statistics = &api.ColumnStatistics{DistinctCount: s.DistinctCount, NullCount: s.NullCount, Avg: s.Avg,
					Completeness: s.Completeness}
				if s.DistinctEstimated {
					sc.Statistics.DistinctEstimated = ptr(true)
				}
				if s.Min != nil {
					sc.Statistics.Min, sc.Statistics.Max = s.Min, s.Max
				}
			}
			return sc
		}
		if t.GeneratedID() {
			id := column("id", "bigint", false)
			id.System = ptr(true)
			id.Role, id.RoleSource = api.ColumnRoleIdentifier, api.SchemaColumnRoleSourceInferred
			table.Columns = append(table.Columns, id)
		}
		roles := datasets.ColumnRoles(t, st.Tables[t.Name], datasets.RelationshipEnds(d.ID, t.Name, rels))
		for i, c := range t.Columns {
			sc := column(c.Name, datasets.SQLType(c), c.Nullable)
			sc.OriginalName = ptr(c.Original)
			if c.Description != "" {
				sc.Description = ptr(c.Description)
			}
			sc.Constraints = constraintsOut(c.Constraints)
			sc.Semantics = semanticsOut(c.Semantics)
			sc.Role, sc.RoleSource = api.ColumnRole(roles[i]), api.SchemaColumnRoleSourceInferred
			if datasets.RoleSet(c) {
				sc.RoleSource = api.SchemaColumnRoleSourceSet
			}
			table.Columns = append(table.Columns, sc)
		}
		out.Tables = append(out.Tables, table)
		if ms := measuresOut(t.Columns); len(ms) > 0 {
			out.Measures = &ms
		}
	}
	for _, r := range rels {
		x := api.Relationship{Type: api.ManyToOne, FromTable: r.FromTable, FromColumn: r.FromColumn, ToTable: r.ToTable,
			ToColumn: r.ToColumn, ToDatasetId: r.ToDataset, ToDatasetName: ptr(r.ToName), Origin: api.RelationshipOrigin(r.Origin)}
		if r.FromDataset != d.ID { // a link to this dataset, seen from here
			x = api.Relationship{Type: api.OneToMany, FromTable: r.ToTable, FromColumn: r.ToColumn, ToTable: r.FromTable,
				ToColumn: r.FromColumn, ToDatasetId: r.FromDataset, ToDatasetName: ptr(r.FromName), Origin: api.RelationshipOrigin(r.Origin)}
		}
		out.Relationships = append(out.Relationships, x)
	}
	return out, nil
}

func constraintsOut(k *ingest.Constraints) *api.ColumnConstraints {
	if k == nil {
		return nil
	}
	out := &api.ColumnConstraints{Minimum: k.Minimum, Maximum: k.Maximum, MinLength: k.MinLength, MaxLength: k.MaxLength}
	if k.Unique {
		out.Unique = ptr(true)
	}
	if k.Enum != nil {
		out.Enum = &k.Enum
	}
	if k.Format != "" {
		out.Format = ptr(k.Format)
	}
	if k.Pattern != "" {
		out.Pattern = ptr(k.Pattern)
	}
	if len(k.Default) > 0 {
		var v any
		_ = json.Unmarshal(k.Default, &v)
		out.Default = v
	}
	return out
}

func (h *Datasets) RefreshDataset(ctx context.Context, req api.RefreshDatasetRequestObject) (api.RefreshDatasetResponseObject, error) {
	var out api.RefreshDataset202JSONResponse
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		d, err := h.dataset(ctx, tx, req.ProjectId, req.DatasetId, "datasets:write")
		if err != nil {
			return err
		}
		if d, err = store.DatasetByID(ctx, tx, d.ID, true); err != nil {
			return err
		}
		if err := active(d, "it can be analysed"); err != nil {
			return err
		}
		out.Body.Status = "started"
		out.Body.EstimatedDurationSeconds = estimate(d)
		id, at, queued, err := analyse(ctx, tx, d, h.Now())
		if err != nil {
			return err
		}
		out.Body.JobId, out.Body.StartedAt = id, at
		if queued {
			if err := h.audit(ctx, tx, d.OrgID, "dataset.refresh", "dataset", d.ID, d.Name, map[string]any{"job_id": id}); err != nil {
				return err
			}
		}
		out.Headers.Location = "/api/v1/jobs/" + out.Body.JobId
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// analyse makes sure an analysis of the dataset is queued or running: the one already there,
// or a new one (queued true). It answers the job's id and when it was queued.
func analyse(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, now time.Time) (id string, at time.Time, queued bool, err error) {
	j, err := jobs.Pending(ctx, tx, datasets.KindAnalyze, d.ID)
	if err == nil {
		return j.ID, j.CreatedAt, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", at, false, err
	}
	id, err = jobs.Enqueue(ctx, tx, jobs.New{Kind: datasets.KindAnalyze, OrgID: d.OrgID, ResourceType: "dataset", ResourceID: d.ID,
		Payload: datasets.Payload{DatasetID: d.ID}}, now)
	return id, now, err == nil, err
}

// estimate is how long an analysis should take: as long as the last one, or about a second
// per 500,000 rows.
func estimate(d *store.Dataset) int {
	if d.IndexTimeMS != nil {
		return max(1, int(math.Ceil(float64(*d.IndexTimeMS)/1000)))
	}
	return max(1, int(deref(d.RowCount)/500_000))
}

func (h *Datasets) ChangeDatasetSchema(ctx context.Context, req api.ChangeDatasetSchemaRequestObject) (api.ChangeDatasetSchemaResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var out api.ChangeDatasetSchema200JSONResponse
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		d, before, after, err := h.alterSchema(ctx, tx, p, req.DatasetId, req.Body)
		if err != nil {
			return err
		}
		now := h.Now()
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		c, _ := json.Marshal(req.Body.Changes)
		sc := &store.SchemaChange{ID: store.NewID("sch"), DatasetID: d.ID, SchemaVersion: d.SchemaVersion + 1, Changes: string(c),
			ColumnsBefore: string(b), ColumnsAfter: string(a), CreatedBy: &p.UserID, CreatedAt: now}
		if err := store.RecordSchemaChange(ctx, tx, sc, false); err != nil {
			return err
		}
		// Statistics of changed columns are stale: analyse again.
		if _, _, _, err := analyse(ctx, tx, d, now); err != nil {
			return err
		}
		if err := h.audit(ctx, tx, d.OrgID, "dataset.schema_change", "dataset", d.ID, d.Name,
			map[string]any{"schema_version": sc.SchemaVersion, "changes": json.RawMessage(c)}); err != nil {
			return err
		}
		out = api.ChangeDatasetSchema200JSONResponse{DatasetId: d.ID, SchemaVersion: sc.SchemaVersion, Changes: req.Body.Changes,
			ChangedAt: now, Columns: columnsOut(after)}
		return nil
	})
	if err != nil {
		return nil, busy(err)
	}
	return out, nil
}

// busy turns a schema change that kept losing to concurrent work on the table (a deadlock
// with an index being built, after Store.Tx's retries) into a 409 the client can retry.
func busy(err error) error {
	var pe *pq.Error
	if errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "55P03") {
		return apierr.Conflict("schema", "the dataset's table is busy (an index is being built on it); try again in a few seconds")
	}
	return err
}

// alterSchema applies a schema change request to the dataset's table in tx (locking the
// dataset row) and answers the dataset with its columns before and after. The caller
// commits it (PUT) or rolls it back (a dry run).
func (h *Datasets) alterSchema(ctx context.Context, tx *sqlx.Tx, p *auth.Principal, id string, body *api.SchemaChangeRequest) (*store.Dataset, []ingest.Column, []ingest.Column, error) {
	d, err := store.DatasetForUserAnyProject(ctx, tx, id, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil, apierr.New(http.StatusNotFound, apierr.CodeDatasetNotFound, "dataset not found").WithDetails(map[string]any{"dataset_id": id})
	} else if err != nil {
		return nil, nil, nil, err
	}
	if _, err := h.Allow(ctx, d.OrgID, d.Reach, "datasets:write"); err != nil {
		return nil, nil, nil, err
	}
	if d, err = store.DatasetByID(ctx, tx, d.ID, true); err != nil {
		return nil, nil, nil, err
	}
	if err := active(d, "its schema can be changed"); err != nil {
		return nil, nil, nil, err
	}
	if d.Type == "database" {
		return nil, nil, nil, apierr.Conflict("type", "a connected dataset's schema is its database's: change it there, then refresh the dataset")
	}
	if v := body.ExpectedVersion; v != nil && *v != d.SchemaVersion {
		return nil, nil, nil, apierr.New(http.StatusConflict, apierr.CodeSchemaVersionConflict,
			fmt.Sprintf("the schema is at version %d, not %d", d.SchemaVersion, *v)).
			WithDetails(map[string]any{"schema_version": d.SchemaVersion, "expected_version": *v})
	}
	var before []ingest.Column
	if err := json.Unmarshal([]byte(d.Columns), &before); err != nil {
		return nil, nil, nil, err
	}
	// Views reading the dataset are recreated over its new columns (or marked broken).
	subject, err := views.DatasetSubject(d)
	if err != nil {
		return nil, nil, nil, err
	}
	var after []ingest.Column
	err = views.Around(ctx, tx, h.Now(), []views.Subject{subject}, func() error {
		var err error
		after, err = h.applyChanges(ctx, tx, d, before, body.Changes)
		return err
	})
	return d, before, after, err
}

func columnsOut(cols []ingest.Column) []api.DatasetColumn {
	out := make([]api.DatasetColumn, len(cols))
	for i, c := range cols {
		out[i] = api.DatasetColumn{Name: c.Name, OriginalName: ptr(c.Original), Type: datasets.SQLType(c), Nullable: c.Nullable,
			Constraints: constraintsOut(c.Constraints)}
		if c.Description != "" {
			out[i].Description = ptr(c.Description)
		}
	}
	return out
}

// applyChanges runs the changes of a PUT schema request through datasets.Alter and turns its
// refusals into API errors.
func (h *Datasets) applyChanges(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, before []ingest.Column, req []api.SchemaChange) ([]ingest.Column, error) {
	changes := make([]datasets.Change, len(req))
	for i, r := range req {
		field := fmt.Sprintf("body.changes[%d]", i)
		ch := datasets.Change{Op: string(r.Op)}
		var name string
		var def *api.ColumnDefinition
		if r.Column != nil {
			if x, err := r.Column.AsColumnDefinition(); err == nil && x.Name != "" {
				def = &x
			} else if n, err := r.Column.AsColumnName(); err == nil {
				name = n
			}
		}
		need := func(ok bool, f, what string) error {
			if !ok {
				return apierr.Field(field+"."+f, "required", what)
			}
			return nil
		}
		var err error
		switch r.Op {
		case "add_column":
			if err = need(def != nil, "column", "add_column takes a column definition"); err == nil {
				c := columnOf(*def)
				ch.Define = &c
			}
		case "rename_column":
			if err = need(name != "", "column", "rename_column takes the column's name"); err == nil {
				err = need(r.NewName != nil, "new_name", "rename_column takes new_name")
			}
			ch.Column, ch.NewName = name, deref(r.NewName)
		case "drop_column":
			err = need(name != "", "column", "drop_column takes the column's name")
			ch.Column = name
		case "alter_column":
			err = need(name != "", "column", "alter_column takes the column's name")
			ch.Column, ch.Alter = name, alteration(r)
		case "set_primary_key":
			err = need(name != "", "column", "set_primary_key takes the column's name")
			ch.Column = name
		case "add_measure", "drop_measure":
			if err = need(r.Measure != nil, "measure", string(r.Op)+" takes measure"); err == nil && r.Op == "add_measure" {
				if err = need(r.Measure.Column != nil, "measure.column", "add_measure takes the column it is built on"); err == nil {
					err = need(r.Measure.Aggregation != nil, "measure.aggregation", "add_measure takes how its values combine (sum, avg, min, max)")
				}
			}
			if err == nil {
				ch.Measure = measureOf(*r.Measure)
			}
		case "add_relationship", "drop_relationship":
			err = need(name != "", "column", string(r.Op)+" takes the column's name")
			if err == nil && r.Op == "add_relationship" {
				err = need(r.References != nil, "references", "add_relationship takes references (dataset_id, column)")
			}
			ch.Column = name
			if r.References != nil {
				ch.References = &datasets.Reference{DatasetID: r.References.DatasetId, Column: deref(r.References.Column)}
			}
		}
		if err != nil {
			return nil, err
		}
		changes[i] = ch
	}
	check := func(i int, c ingest.Column) error {
		field := fmt.Sprintf("body.changes[%d]", i)
		errs, err := checkColumn(ctx, h.Store.DB, c, field)
		if err == nil && len(errs) > 0 {
			err = apierr.Validation(errs...)
		}
		return err
	}
	after, err := datasets.Alter(ctx, tx, d, before, changes, check)
	var ce *datasets.ChangeError
	var vs datasets.Violations
	switch {
	case errors.As(err, &ce):
		return nil, apierr.Field(fmt.Sprintf("body.changes[%d].%s", ce.Index, ce.Field), ce.Code, ce.Message)
	case errors.As(err, &vs):
		return nil, apierr.New(http.StatusUnprocessableEntity, apierr.CodeSchemaViolation,
			fmt.Sprintf("existing rows violate %d of the changes; nothing was changed", len(vs))).WithDetails(map[string]any{"violations": vs})
	}
	return after, err
}

// measureOf is a measure of a schema change request.
func measureOf(m api.Measure) *ingest.Measure {
	out := &ingest.Measure{Name: m.Name, Description: deref(m.Description)}
	if m.Aggregation != nil {
		out.Aggregation = string(*m.Aggregation)
	}
	if m.Column != nil {
		out.Column = *m.Column
	}
	if m.Minus != nil {
		out.Minus = *m.Minus
	}
	if m.Unit != nil {
		out.Unit = string(*m.Unit)
	}
	return out
}

// alteration is alter_column's settings as a change to a column.
func alteration(r api.SchemaChange) func(c *ingest.Column) {
	return func(c *ingest.Column) {
		k := c.Constraints
		if r.DropConstraints != nil {
			for _, x := range *r.DropConstraints {
				switch x {
				case api.Unique:
					k.Unique = false
				case api.Enum:
					k.Enum = nil
				case api.Default:
					k.Default = nil
				case api.Format:
					k.Format = ""
				case api.Pattern:
					k.Pattern = ""
				case api.Minimum:
					k.Minimum = nil
				case api.Maximum:
					k.Maximum = nil
				case api.MinLength:
					k.MinLength = nil
				case api.MaxLength:
					k.MaxLength = nil
				}
			}
		}
		if r.Type != nil {
			c.Type = ingest.Type(*r.Type)
		}
		if r.Required != nil {
			c.Nullable = !*r.Required
		}
		if r.Description != nil {
			c.Description = *r.Description
		}
		if r.Aliases != nil || r.Unit != nil || r.DefaultAggregation != nil || r.Role != nil {
			c.Semantics = semanticsChange(c.Semantics, r)
		}
		if r.Unique != nil {
			k.Unique = *r.Unique
		}
		if r.Enum != nil {
			k.Enum = *r.Enum
		}
		if r.Default != nil {
			k.Default, _ = json.Marshal(r.Default)
		}
		if r.Format != nil {
			k.Format = string(*r.Format)
		}
		if r.Pattern != nil {
			k.Pattern = *r.Pattern
		}
		if r.Minimum != nil {
			k.Minimum = r.Minimum
		}
		if r.Maximum != nil {
			k.Maximum = r.Maximum
		}
		if r.MinLength != nil {
			k.MinLength = r.MinLength
		}
		if r.MaxLength != nil {
			k.MaxLength = r.MaxLength
		}
	}
}

// semanticsChange is a column's semantics with alter_column's aliases, unit, default
// aggregation and role applied (an empty list or unit removes them, role "inferred" the role
// set before); nil when nothing is left.
func semanticsChange(cur *ingest.Semantics, r api.SchemaChange) *ingest.Semantics {
	s := ingest.Semantics{}
	if cur != nil {
		s = *cur
	}
	if r.Aliases != nil {
		s.Aliases = nil
		for _, a := range *r.Aliases {
			if a = strings.TrimSpace(a); a != "" && !slices.Contains(s.Aliases, a) {
				s.Aliases = append(s.Aliases, a)
			}
		}
	}
	if r.Unit != nil {
		s.Unit = strings.TrimSpace(*r.Unit)
	}
	if r.DefaultAggregation != nil {
		s.DefaultAggregation = string(*r.DefaultAggregation)
	}
	if r.Role != nil {
		s.Role = string(*r.Role)
		if *r.Role == api.SchemaChangeRoleInferred {
			s.Role = ""
		}
	}
	if s.Empty() {
		return nil
	}
	return &s
}

// measuresOut are the named measures of a table's columns, each with how it is computed.
func measuresOut(cols []ingest.Column) []api.MeasureRead {
	var out []api.MeasureRead
	for _, m := range ingest.Measures(cols) {
		r := api.MeasureRead{Name: m.Name, Aggregation: api.MeasureReadAggregation(m.Aggregation), Column: m.Column,
			Expression: ingest.MeasureExpression(m)}
		if m.Minus != "" {
			r.Minus = ptr(m.Minus)
		}
		if u := ingest.MeasureUnit(m, cols); u != "" {
			r.Unit = ptr(u)
		}
		if m.Description != "" {
			r.Description = ptr(m.Description)
		}
		out = append(out, r)
	}
	return out
}

func semanticsOut(s *ingest.Semantics) *api.ColumnSemantics {
	if s.Empty() {
		return nil
	}
	out := &api.ColumnSemantics{}
	if len(s.Aliases) > 0 {
		out.Aliases = ptr(slices.Clone(s.Aliases))
	}
	if s.Unit != "" {
		out.Unit = ptr(s.Unit)
	}
	if s.DefaultAggregation != "" {
		out.DefaultAggregation = ptr(api.DefaultAggregation(s.DefaultAggregation))
	}
	if s.Role != "" {
		out.Role = ptr(api.ColumnRole(s.Role))
	}
	return out
}
