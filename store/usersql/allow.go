package usersql

import (
	"regexp"
	"strings"
)

// The guard's allow-lists. User SQL may use only the parse-tree node kinds, functions,
// operators and built-in types named here (and the row types of the relations it may read,
// which its caller maps like the relations themselves); everything else is refused by default. A function is
// allowed when it computes a value from its arguments alone: it does not run SQL given as a
// string (ts_stat, query_to_xml), describe or look up database objects (pg_describe_object,
// to_regclass, reg* casts), read settings, files, the server or other sessions (current_setting,
// pg_read_file, version, inet_server_addr, pg_stat_*), change session state (set_config,
// setseed, nextval, advisory locks) or reach outside (dblink, lo_*). The database is the
// wall behind this list: the query role can only read its organization's tables, and EXECUTE
// on the functions that break those rules is revoked from PUBLIC where the platform owns them.

// nodeKinds are the parse-tree nodes a plain SELECT may hold. Node kinds start with a capital
// letter in pg_query's JSON (fields do not): any other node kind is refused, so a construct
// PostgreSQL's grammar gains later is refused until it is looked at.
var nodeKinds = set(
	// the statement and its clauses
	"SelectStmt", "ResTarget", "RangeVar", "RangeSubselect", "RangeFunction", "RangeTableSample", "JoinExpr",
	"Alias", "SortBy", "WindowDef", "WithClause", "CommonTableExpr", "CTESearchClause", "CTECycleClause",
	"GroupingSet", "ColumnDef", "List",
	// values and expressions
	"String", "Integer", "Float", "Boolean", "BitString", "A_Const", "A_Star", "A_Expr", "A_ArrayExpr",
	"A_Indirection", "A_Indices", "ColumnRef", "ParamRef", "FuncCall", "NamedArgExpr", "TypeCast", "TypeName",
	"CollateClause", "SubLink", "BoolExpr", "NullTest", "BooleanTest", "CaseExpr", "CaseWhen", "CoalesceExpr",
	"MinMaxExpr", "RowExpr", "GroupingFunc", "SQLValueFunction",
	// SQL/JSON (PostgreSQL 16 and 17): computed from their arguments
	"JsonFormat", "JsonReturning", "JsonValueExpr", "JsonBehavior", "JsonOutput", "JsonArgument", "JsonFuncExpr",
	"JsonTablePathSpec", "JsonTable", "JsonTableColumn", "JsonKeyValue", "JsonParseExpr", "JsonScalarExpr",
	"JsonSerializeExpr", "JsonObjectConstructor", "JsonArrayConstructor", "JsonArrayQueryConstructor",
	"JsonAggConstructor", "JsonObjectAgg", "JsonArrayAgg", "JsonIsPredicate",
)

// refusedKinds explain the node kinds users are likely to try.
var refusedKinds = map[string]string{
	"XmlExpr": "XML functions are not allowed", "XmlSerialize": "XML functions are not allowed",
	"RangeTableFunc": "XMLTABLE is not allowed", "RangeTableFuncCol": "XMLTABLE is not allowed",
	"IntoClause":    "SELECT INTO creates a table: not allowed",
	"LockingClause": "locking clauses (FOR UPDATE, FOR SHARE) are not allowed",
}

// functions are the functions user SQL may call, unqualified or as pg_catalog.name.
var functions = set(
	// aggregates
	"count", "sum", "avg", "min", "max", "array_agg", "string_agg", "json_agg", "jsonb_agg", "json_agg_strict",
	"jsonb_agg_strict", "json_object_agg", "jsonb_object_agg", "json_object_agg_strict", "jsonb_object_agg_strict",
	"json_object_agg_unique", "jsonb_object_agg_unique", "json_object_agg_unique_strict", "jsonb_object_agg_unique_strict",
	"bool_and", "bool_or", "every", "bit_and", "bit_or", "bit_xor", "any_value", "range_agg", "range_intersect_agg",
	"stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "corr", "covar_pop", "covar_samp",
	"regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
	"mode", "percentile_cont", "percentile_disc",
	// window functions (rank and friends are also hypothetical-set aggregates)
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
	"last_value", "nth_value",
	// mathematics
	"abs", "cbrt", "ceil", "ceiling", "degrees", "div", "exp", "factorial", "floor", "gcd", "lcm", "ln", "log",
	"log10", "min_scale", "mod", "pi", "power", "pow", "radians", "random", "random_normal", "round", "scale", "sign",
	"sqrt", "trim_scale", "trunc", "width_bucket", "acos", "acosd", "asin", "asind", "atan", "atand", "atan2",
	"atan2d", "cos", "cosd", "cot", "cotd", "sin", "sind", "tan", "tand", "sinh", "cosh", "tanh", "asinh", "acosh",
	"atanh", "erf", "erfc", "num_nonnulls", "num_nulls",
	// strings and bytes
	"ascii", "bit_length", "btrim", "ltrim", "rtrim", "char_length", "character_length", "chr", "concat",
	"concat_ws", "format", "initcap", "left", "right", "length", "lower", "upper", "lpad", "rpad", "md5",
	"normalize", "is_normalized", "octet_length", "overlay", "position", "quote_ident", "quote_literal",
	"quote_nullable", "regexp_count", "regexp_instr", "regexp_like", "regexp_match", "regexp_matches",
	"regexp_replace", "regexp_split_to_array", "regexp_split_to_table", "regexp_substr", "repeat", "replace",
	"reverse", "split_part", "starts_with", "string_to_array", "string_to_table", "strpos", "substr",
	"substring", "to_ascii", "to_hex", "translate", "unistr", "casefold", "sha224", "sha256", "sha384", "sha512",
	"encode", "decode", "convert", "convert_from", "convert_to", "get_bit", "get_byte", "set_bit", "set_byte",
	"bit_count", "like_escape", "similar_escape", "similar_to_escape", "gen_random_uuid", "uuidv4", "uuidv7",
	"uuid_extract_timestamp", "uuid_extract_version", "parse_ident",
	// dates and times, formatting
	"age", "clock_timestamp", "date_bin", "date_part", "date_trunc", "date_add", "date_subtract", "extract",
	"isfinite", "justify_days", "justify_hours", "justify_interval", "make_date", "make_interval", "make_time",
	"make_timestamp", "make_timestamptz", "now", "statement_timestamp", "timeofday", "transaction_timestamp",
	"to_timestamp", "timezone", "overlaps", "to_char", "to_date", "to_number",
	// conversions written as functions
	"int2", "int4", "int8", "float4", "float8", "numeric", "text", "bool", "date", "time", "timetz", "timestamp",
	"timestamptz", "interval", "varchar", "bpchar",
	// JSON
	"to_json", "to_jsonb", "array_to_json", "row_to_json", "json_build_array", "json_build_object", "json_object",
	"json_array_length", "json_array_elements", "json_array_elements_text", "json_each", "json_each_text",
	"json_extract_path", "json_extract_path_text", "json_object_keys", "json_populate_record",
	"json_populate_recordset", "json_to_record", "json_to_recordset", "json_strip_nulls", "json_typeof",
	"jsonb_build_array", "jsonb_build_object", "jsonb_object", "jsonb_array_length", "jsonb_array_elements",
	"jsonb_array_elements_text", "jsonb_each", "jsonb_each_text", "jsonb_extract_path", "jsonb_extract_path_text",
	"jsonb_object_keys", "jsonb_populate_record", "jsonb_populate_record_valid", "jsonb_populate_recordset",
	"jsonb_to_record", "jsonb_to_recordset", "jsonb_strip_nulls", "jsonb_typeof", "jsonb_pretty", "jsonb_set",
	"jsonb_set_lax", "jsonb_insert", "jsonb_path_exists", "jsonb_path_match", "jsonb_path_query",
	"jsonb_path_query_array", "jsonb_path_query_first", "jsonb_path_exists_tz", "jsonb_path_match_tz",
	"jsonb_path_query_tz", "jsonb_path_query_array_tz", "jsonb_path_query_first_tz", "json_scalar", "json_serialize",
	// arrays, ranges, series
	"array_append", "array_cat", "array_dims", "array_fill", "array_length", "array_lower", "array_ndims",
	"array_position", "array_positions", "array_prepend", "array_remove", "array_replace", "array_to_string",
	"array_upper", "array_sample", "array_shuffle", "array_reverse", "array_sort", "cardinality",
	"generate_subscripts", "trim_array", "unnest", "generate_series", "lower_inc", "upper_inc", "lower_inf",
	"upper_inf", "isempty", "range_merge", "multirange", "int4range", "int8range", "numrange", "daterange",
	"tsrange", "tstzrange", "int4multirange", "int8multirange", "nummultirange", "datemultirange",
	"tsmultirange", "tstzmultirange",
	// full-text search over values (never ts_stat or ts_rewrite: they run SQL given as text)
	"to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery", "ts_rank",
	"ts_rank_cd", "ts_headline", "setweight", "strip", "numnode", "querytree", "tsvector_to_array",
	"array_to_tsvector", "ts_delete", "ts_filter", "json_to_tsvector", "jsonb_to_tsvector", "tsquery_phrase",
	// network addresses and geometry
	"abbrev", "broadcast", "family", "host", "hostmask", "inet_merge", "inet_same_family", "masklen", "netmask",
	"network", "set_masklen", "area", "center", "diameter", "height", "width", "radius", "npoints", "point", "box",
	"circle", "polygon", "path", "lseg", "line",
	// enums and a value's own type and size
	"enum_first", "enum_last", "enum_range", "pg_typeof", "pg_column_size", "pg_size_pretty", "pg_size_bytes",
)

// operators are the operators user SQL may use, bare or as OPERATOR(pg_catalog.op); the
// A_Expr kinds BETWEEN and friends carry their keyword as the name.
var operators = set(
	"=", "<>", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "^", "|/", "||/", "@", "&", "|", "#", "~",
	"<<", ">>", "||", "~~", "!~~", "~~*", "!~~*", "~*", "!~", "!~*", "@>", "<@", "&&", "->", "->>", "#>", "#>>",
	"#-", "?", "?|", "?&", "@?", "@@", "<->", "-|-", "&<", "&>", "<<=", ">>=", "!!", "~=", "@-@", "##", "?#",
	"?-", "?-|", "?||", "<^", ">^", "<<|", "|>>", "&<|", "|&>",
	"BETWEEN", "NOT BETWEEN", "BETWEEN SYMMETRIC", "NOT BETWEEN SYMMETRIC",
)

// types are the built-in types user SQL may name (cast to, declare a column of), bare or as
// pg_catalog.name: the grammar's spellings (integer, double precision, character varying,
// timestamp with time zone...) arrive as pg_catalog names of this list. Arrays of them are
// written type[].
var types = set(
	"bool", "char", "bpchar", "varchar", "text", "name", "bytea", "bit", "varbit",
	"int2", "int4", "int8", "numeric", "float4", "float8", "money",
	"date", "time", "timetz", "timestamp", "timestamptz", "interval",
	"json", "jsonb", "jsonpath", "uuid", "xml", "tsvector", "tsquery",
	"inet", "cidr", "macaddr", "macaddr8", "point", "line", "lseg", "box", "path", "polygon", "circle",
	"int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange",
	"int4multirange", "int8multirange", "nummultirange", "datemultirange", "tsmultirange", "tstzmultirange",
)

// refusedTypes are the other types of pg_catalog, which user SQL may not name: the reg*
// types turn names into catalog oids and back (x::oid::regclass names every table of the
// database), the others are catalog internals and pseudo-types. Compared folded, so that a
// quoted "REGCLASS" is refused as such.
var refusedTypes = set(
	"regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype", "regnamespace", "regrole",
	"regconfig", "regdictionary", "regcollation", "oid", "xid", "xid8", "cid", "tid", "oidvector", "int2vector",
	"aclitem", "pg_node_tree", "pg_ndistinct", "pg_dependencies", "pg_mcv_list", "pg_snapshot", "txid_snapshot",
	"pg_lsn", "pg_ddl_command", "refcursor", "gtsvector", "pg_brin_bloom_summary", "pg_brin_minmax_multi_summary",
	"any", "anyarray", "anycompatible", "anycompatiblearray", "anycompatiblemultirange", "anycompatiblenonarray",
	"anycompatiblerange", "anyelement", "anyenum", "anymultirange", "anynonarray", "anyrange", "cstring",
	"event_trigger", "fdw_handler", "index_am_handler", "internal", "language_handler", "record", "table_am_handler",
	"trigger", "tsm_handler", "unknown", "void",
)

// rowType reports whether a type name (as written, qualified or not) is no type of
// pg_catalog: then it can only be a relation's row type (every table and view has one, under
// its name, and its array type under _name), which user SQL may name only where it may read
// the relation. Relations lists such names with the tables, for the caller to map.
func rowType(parts []string) bool {
	name, ok := catalogName(parts)
	if !ok {
		return true // qualified by another schema than pg_catalog
	}
	return len(parts) == 1 && !types[name] && !refusedTypes[strings.ToLower(name)]
}

// sqlValueFunctions are the keyword functions allowed (SVFOP_ values): the dates and times.
// CURRENT_USER, SESSION_USER, CURRENT_CATALOG and CURRENT_SCHEMA name the platform's roles,
// database and schemas.
var sqlValueFunctions = set(
	"SVFOP_CURRENT_DATE", "SVFOP_CURRENT_TIME", "SVFOP_CURRENT_TIME_N", "SVFOP_CURRENT_TIMESTAMP",
	"SVFOP_CURRENT_TIMESTAMP_N", "SVFOP_LOCALTIME", "SVFOP_LOCALTIME_N", "SVFOP_LOCALTIMESTAMP", "SVFOP_LOCALTIMESTAMP_N",
)

// fieldNames are the fields (expr).name may select besides names of allowed functions: those
// of jsonb_each and friends, and of anonymous records.
var fieldNames = regexp.MustCompile(`^(key|value|f[1-9][0-9]?)$`)

// sampleMethods are the TABLESAMPLE methods (each is a function by that name).
var sampleMethods = set("system", "bernoulli")

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// sized are the functions whose arguments say how large a value, or how many rows, they
// make. The schema sql_limits, first on user SQL's search path, holds functions of the same
// names and signatures that refuse a size over its limit (program_limit_exceeded) before
// anything is allocated; so these may be called only bare, never as pg_catalog.name.
// maxArgs is the most arguments the wrappers take: a later overload would not be wrapped.
var sized = map[string]int{"repeat": 2, "lpad": 3, "rpad": 3, "array_fill": 3, "generate_series": 3}

// catalogName splits a possibly schema-qualified name: it is allowed only bare or in
// pg_catalog. A name qualified by any other schema may denote something a user created.
func catalogName(parts []string) (string, bool) {
	switch len(parts) {
	case 1:
		return parts[0], true
	case 2:
		return parts[1], parts[0] == "pg_catalog"
	}
	return strings.Join(parts, "."), false
}
