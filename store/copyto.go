package store

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jmoiron/sqlx"
)

// COPY ... TO STDOUT, for bulk reads whose output PostgreSQL can write itself (record
// exports): the rows arrive as the file's own bytes, one message per row, and the reader
// only copies them. lib/pq refuses COPY TO, so these run on a connection of their own made
// by pgx's protocol layer (pgconn) with the same URL as the pool they stand for; the pool's
// connections and transactions are untouched.

// urls are the connection URLs of the pools open made (*sqlx.DB → string), as the operator
// gave them (without the lib/pq settings open adds).
var urls sync.Map

// ErrNoCopyOut says a pool has no URL a COPY connection can be made from (a test's own
// pool, say): the caller reads another way.
var ErrNoCopyOut = errors.New("no COPY TO connection for this database")

// CopyOut is a connection ready to run one COPY ... TO STDOUT.
type CopyOut struct {
	conn *pgconn.PgConn
}

// OpenCopyOut connects to db's database for a COPY TO. The session reads dates as the
// pool's do (DateStyle ISO, the text of a timestamp its ISO form), in UTF-8.
func OpenCopyOut(ctx context.Context, db *sqlx.DB) (*CopyOut, error) {
	u, ok := urls.Load(db)
	if !ok {
		return nil, ErrNoCopyOut
	}
	cfg, err := pgconn.ParseConfig(u.(string))
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"binary_parameters", "disable_prepared_binary_result"} { // lib/pq's own
		delete(cfg.RuntimeParams, k)
	}
	// Reads of 256 KiB instead of 8 KiB: a large COPY arrives in a tenth of the system calls.
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		return pgproto3.NewFrontend(bufio.NewReaderSize(r, 256<<10), w)
	}
	if dial := cfg.DialFunc; dial != nil {
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return bulkReading(c), nil
		}
	}
	cfg.RuntimeParams["datestyle"] = "ISO, MDY"
	cfg.RuntimeParams["client_encoding"] = "UTF8"
	cctx, cancel := context.WithTimeout(ctx, copyConnectWait)
	defer cancel()
	conn, err := pgconn.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	return &CopyOut{conn: conn}, nil
}

// Copy runs query (a COPY ... TO STDOUT) and writes its data to w as it arrives, one Write
// per row. When ctx ends the connection is cut, which stops the query on the server.
func (c *CopyOut) Copy(ctx context.Context, query string, w io.Writer) (int64, error) {
	tag, err := c.conn.CopyTo(ctx, w, query)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// copyConnectWait bounds the making of a COPY connection (the caller then reads another
// way), copyCloseWait the goodbye to the server when it closes.
const (
	copyConnectWait = 10 * time.Second
	copyCloseWait   = time.Second
)

// Close ends the connection.
func (c *CopyOut) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), copyCloseWait)
	defer cancel()
	return c.conn.Close(ctx)
}
