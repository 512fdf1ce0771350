package records

import "database/sql"

var errNoRows = sql.ErrNoRows
