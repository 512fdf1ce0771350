package jobs

import "database/sql"

var errNoRows = sql.ErrNoRows

type sqlResult = sql.Result

func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
