package records

// Copied reports whether x is read with COPY ... TO STDOUT (for the tests of records_test).
func Copied(x *Export) bool { return x.out != nil }
