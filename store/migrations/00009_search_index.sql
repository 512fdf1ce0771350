-- +goose Up
-- array_to_string is only STABLE (it formats any element type); for text[] it cannot change,
-- and the record search's index expression needs an IMMUTABLE function.
CREATE FUNCTION platform.text_array_words(text[]) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT array_to_string($1, ' ') $$;

-- +goose Down
DROP FUNCTION platform.text_array_words(text[]);
