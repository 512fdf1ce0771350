package store

import "fmt"

// wrap names the operation that failed ("create dataset: ..."), so the log line of whoever
// ends up with the error says which; nil stays nil. %w keeps errors.Is and errors.As working.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}
