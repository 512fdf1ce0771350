// Package parquettest makes hostile Parquet files for tests.
package parquettest

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// zeros reads as many zero bytes as asked.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// Bomb is a Parquet file of one required BYTE_ARRAY column "v" holding one value of n
// zero bytes in a single zstd page of a few kilobytes. Its page header declares declared
// bytes uncompressed (n+4 is the truth). Nothing of the n bytes is held while writing it.
func Bomb(n, declared int64) []byte { return BombWith(n, declared, nil) }

// BombWith is Bomb with its page header's bytes changed by edit, when not nil.
func BombWith(n, declared int64, edit func(header []byte) []byte) []byte {
	var body bytes.Buffer
	zw, err := zstd.NewWriter(&body, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	_ = binary.Write(zw, binary.LittleEndian, uint32(n)) // PLAIN: length, then the bytes
	_, _ = io.Copy(zw, io.LimitReader(zeros{}, n))
	_ = zw.Close()
	compact := new(thrift.CompactProtocol)
	header, err := thrift.Marshal(compact, &format.PageHeader{
		Type: format.DataPage, UncompressedPageSize: int32(declared), CompressedPageSize: int32(body.Len()),
		DataPageHeader: thrift.New(format.DataPageHeader{NumValues: 1, Encoding: format.Plain,
			DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE,
			Statistics: format.Statistics{MaxValue: []byte("MAXV")}}),
	})
	if err != nil {
		panic(err)
	}
	if edit != nil {
		header = edit(header)
	}
	chunk := int64(len(header) + body.Len())
	footer, err := thrift.Marshal(compact, &format.FileMetaData{
		Version: 1,
		NumRows: 1,
		Schema: thrift.Slice[format.SchemaElement]{
			{Name: "schema", NumChildren: thrift.New(int32(1))},
			{Name: "v", Type: thrift.New(format.ByteArray), RepetitionType: thrift.New(format.Required)},
		},
		RowGroups: thrift.Slice[format.RowGroup]{{
			NumRows: 1, TotalByteSize: declared,
			Columns: thrift.Slice[format.ColumnChunk]{{FileOffset: 4, MetaData: format.ColumnMetaData{
				Type: format.ByteArray, Encoding: thrift.Slice[format.Encoding]{format.Plain}, PathInSchema: thrift.Slice[string]{"v"},
				Codec: format.Zstd, NumValues: 1, TotalUncompressedSize: int64(len(header)) + declared,
				TotalCompressedSize: chunk, DataPageOffset: 4,
			}}},
		}},
	})
	if err != nil {
		panic(err)
	}
	var f bytes.Buffer
	f.WriteString("PAR1")
	f.Write(header)
	f.Write(body.Bytes())
	f.Write(footer)
	_ = binary.Write(&f, binary.LittleEndian, uint32(len(footer)))
	f.WriteString("PAR1")
	return f.Bytes()
}

// EditFooter returns the Parquet file with its footer changed by edit, its pages as they were.
func EditFooter(file []byte, edit func(*format.FileMetaData)) []byte {
	n := int(binary.LittleEndian.Uint32(file[len(file)-8:]))
	start := len(file) - 8 - n
	var md format.FileMetaData
	compact := new(thrift.CompactProtocol)
	if err := thrift.Unmarshal(compact, file[start:len(file)-8], &md); err != nil {
		panic(err)
	}
	edit(&md)
	footer, err := thrift.Marshal(compact, &md)
	if err != nil {
		panic(err)
	}
	out := append(bytes.Clone(file[:start]), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// WithFooter is a Parquet file of no pages and the given footer bytes.
func WithFooter(footer []byte) []byte {
	f := append([]byte("PAR1"), footer...)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(footer)))
	return append(f, "PAR1"...)
}

// Page is a Parquet file of one column "v" holding one uncompressed data page (v1), after a
// dictionary page when Dict is set.
type Page struct {
	Type       format.Type
	Repetition format.FieldRepetitionType // REQUIRED or OPTIONAL
	Length     int32                      // of a FIXED_LEN_BYTE_ARRAY
	Encoding   format.Encoding
	Values     int32
	Body       []byte // as stored: definition levels of an OPTIONAL column, then the values
	Dict       []byte // PLAIN values of DictValues
	DictValues int32
}

// File writes the page's file.
func (p Page) File() []byte {
	compact := new(thrift.CompactProtocol)
	var chunk []byte
	md := format.ColumnMetaData{
		Type: p.Type, Encoding: thrift.Slice[format.Encoding]{p.Encoding}, PathInSchema: thrift.Slice[string]{"v"},
		Codec: format.Uncompressed, NumValues: int64(p.Values), DataPageOffset: 4,
	}
	if p.Dict != nil {
		h, err := thrift.Marshal(compact, &format.PageHeader{
			Type: format.DictionaryPage, UncompressedPageSize: int32(len(p.Dict)), CompressedPageSize: int32(len(p.Dict)),
			DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: p.DictValues, Encoding: format.Plain}),
		})
		if err != nil {
			panic(err)
		}
		chunk = append(append(chunk, h...), p.Dict...)
		md.DictionaryPageOffset, md.DataPageOffset = 4, int64(4+len(chunk))
	}
	h, err := thrift.Marshal(compact, &format.PageHeader{
		Type: format.DataPage, UncompressedPageSize: int32(len(p.Body)), CompressedPageSize: int32(len(p.Body)),
		DataPageHeader: thrift.New(format.DataPageHeader{NumValues: p.Values, Encoding: p.Encoding,
			DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE}),
	})
	if err != nil {
		panic(err)
	}
	chunk = append(append(chunk, h...), p.Body...)
	md.TotalUncompressedSize, md.TotalCompressedSize = int64(len(chunk)), int64(len(chunk))
	v := format.SchemaElement{Name: "v", Type: thrift.New(p.Type), RepetitionType: thrift.New(p.Repetition)}
	if p.Length != 0 {
		v.TypeLength = thrift.New(p.Length)
	}
	footer, err := thrift.Marshal(compact, &format.FileMetaData{
		Version: 1,
		NumRows: int64(p.Values),
		Schema:  thrift.Slice[format.SchemaElement]{{Name: "schema", NumChildren: thrift.New(int32(1))}, v},
		RowGroups: thrift.Slice[format.RowGroup]{{
			NumRows: int64(p.Values), TotalByteSize: int64(len(chunk)),
			Columns: thrift.Slice[format.ColumnChunk]{{FileOffset: 4, MetaData: md}},
		}},
	})
	if err != nil {
		panic(err)
	}
	f := append([]byte("PAR1"), chunk...)
	f = append(f, footer...)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(footer)))
	return append(f, "PAR1"...)
}
