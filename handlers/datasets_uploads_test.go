package handlers

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"syscall"
	"testing"

	"dataplatform/handlers/apierr"
)

// A full disk is 507 STORAGE_FULL; a disk that cannot be written otherwise is 503
// STORAGE_UNAVAILABLE with Retry-After (the unwritable case runs end to end in tests/).
func TestStorageError(t *testing.T) {
	h := &Handlers{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, c := range []struct {
		err    error
		status int
		code   apierr.Code
	}{
		{&os.PathError{Op: "write", Path: "/data/uploads/x", Err: syscall.ENOSPC}, http.StatusInsufficientStorage, apierr.CodeStorageFull},
		{&os.PathError{Op: "write", Path: "/data/uploads/x", Err: syscall.EDQUOT}, http.StatusInsufficientStorage, apierr.CodeStorageFull},
		{&os.PathError{Op: "open", Path: "/data/uploads/x", Err: syscall.EROFS}, http.StatusServiceUnavailable, apierr.CodeStorageUnavailable},
		{&os.PathError{Op: "mkdir", Path: "/data/uploads", Err: syscall.EACCES}, http.StatusServiceUnavailable, apierr.CodeStorageUnavailable},
	} {
		var ae *apierr.Error
		if !errors.As(h.storageError(c.err), &ae) || ae.Status != c.status || ae.Code != c.code {
			t.Errorf("%v: %v", c.err, ae)
		}
	}
}
