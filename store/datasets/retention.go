package datasets

import (
	"context"
	"fmt"
	"time"

	"dataplatform/store"

	"github.com/jmoiron/sqlx"
)

// PurgeDeleted hard-deletes the soft-deleted records of every uploaded dataset that were
// deleted longer ago than their organization's settings.defaults.dataset_retention_days, and
// returns how many went. Every replica may run it; a row goes once.
func PurgeDeleted(ctx context.Context, db *sqlx.DB, now time.Time) (int64, error) {
	var ds []struct {
		store.Dataset
		Days int `db:"days"`
	}
	err := db.SelectContext(ctx, &ds, `SELECT d.id, d.table_schema, d.columns, d.tables,
		COALESCE((o.settings->'defaults'->>'dataset_retention_days')::int, $1) AS days
		FROM platform.datasets d JOIN platform.organizations o ON o.id = d.organization_id
		WHERE d.status = 'active' AND d.tables IS NULL`, store.DefaultSettings().Defaults.DatasetRetentionDays)
	if err != nil {
		return 0, fmt.Errorf("purge deleted records: %w", err)
	}
	var n int64
	for i := range ds {
		ts, err := Tables(&ds[i].Dataset)
		if err != nil {
			return n, fmt.Errorf("purge deleted records: %w", err)
		}
		before := now.AddDate(0, 0, -ds[i].Days)
		for _, t := range ts {
			if !t.System() {
				continue
			}
			res, err := db.ExecContext(ctx, `DELETE FROM `+t.Qualified()+` WHERE deleted_at < $1`, before)
			if err != nil {
				return n, fmt.Errorf("purge deleted records: %w", err)
			}
			k, _ := res.RowsAffected()
			n += k
		}
	}
	return n, nil
}
