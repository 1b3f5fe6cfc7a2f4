//! A run's tables (`packets`, `tx`, `rtt`, `frames`) written to Parquet as the run goes, by a thread
//! beside the engine: the engine hands over each chunk of finished rows and goes on; the thread turns it
//! into an Arrow record batch and writes it as one row group, and hands packet-log chunks back for the
//! engine to reuse. Neither holds the GIL, so a streamed run needs neither pyarrow nor numpy in Python
//! while it runs, and the writing takes the second core only (Python's writer had shared that core and
//! the GIL with the imports: ns-3's anchor, whole process, ×23.8 → ×28.7 of ns-3 side by side).
//!
//! The files are those the Python layer's in-memory path writes (`lasthop.result`): the same columns,
//! types and nulls as `pa.Table.from_pandas` of its DataFrames, its pandas metadata (but for the
//! `creator`, which names this writer) and its categories ([`CATEGORIES_KEY`]); a test compares the
//! schemas and metadata, and the tables value for value.

use arrow_array::types::{Int16Type, Int32Type, Int8Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array,
    LargeStringArray, NullArray, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use lasthop_core::mac::medium::TxLog;
use lasthop_core::stats::{DropReason, FlowField, FlowSummary, FrameSeries, PacketLog, RttSeries, Stage, NO_TIME};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Where each table goes (temporary names; the caller puts them in place once the run is complete).
pub(crate) struct TableFiles {
    pub packets: PathBuf,
    pub tx: PathBuf,
    pub rtt: PathBuf,
    pub frames: PathBuf,
}

/// What the tables' categorical columns name, and the pandas version their metadata records.
pub(crate) struct Labels {
    pub flows: Vec<String>,
    pub pandas_version: String,
}

/// A chunk of one table's rows (a few per 65,536 rows: their size does not matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Chunk {
    Packets(PacketLog),
    /// The per-PSDU rows and the (source, destination) names of the links they index.
    Tx(TxLog, Vec<(String, String)>),
    Rtt(RttSeries),
    Frames(FrameSeries),
    /// The run has ended: the chunks that follow are its last rows, which the close syncs with the
    /// footer (each row group before is synced as it is written, while the engine runs).
    RunEnded,
}

/// The schema metadata key naming each categorical column's categories, in order (JSON). Parquet keeps
/// only the values a row group uses, in the order it meets them, so a reader restores the categories
/// from it (`lasthop.result.read_table`); pyarrow's writer kept the whole dictionary.
const CATEGORIES_KEY: &str = "lasthop.categories";

/// Chunks waiting for the writer at most (the engine waits beyond that): memory holds a few chunks
/// however long the run.
const PENDING: usize = 2;

/// The writer thread and the way to it.
pub(crate) struct TableWriter {
    chunks: Option<SyncSender<Chunk>>,
    /// Set when the run is abandoned: the writer drops what is queued and does not sync at the close.
    abort: Arc<AtomicBool>,
    /// Packet-log chunks written, handed back so the engine reuses their buffers.
    written: Receiver<PacketLog>,
    thread: Option<JoinHandle<Result<(), String>>>,
    files: Vec<PathBuf>,
}

impl TableWriter {
    /// Starts the writer thread; `Err` if the system refuses a thread.
    pub fn start(files: TableFiles, labels: Labels) -> Result<TableWriter, String> {
        let (tx, rx) = sync_channel(PENDING);
        let (back, written) = sync_channel(PENDING + 1);
        let paths = vec![files.packets.clone(), files.tx.clone(), files.rtt.clone(), files.frames.clone()];
        let abort = Arc::new(AtomicBool::new(false));
        let flag = abort.clone();
        let thread = std::thread::Builder::new()
            .name("lasthop-tables".into())
            .spawn(move || write_all(rx, back, files, labels, flag))
            .map_err(|e| format!("cannot start the table writer: {e}"))?;
        Ok(TableWriter { chunks: Some(tx), abort, written, thread: Some(thread), files: paths })
    }

    /// Hands a chunk over, waiting while [`PENDING`] wait already. `Err`: the writer failed (its error).
    pub fn send(&mut self, chunk: Chunk) -> Result<(), String> {
        let sent = self.chunks.as_ref().expect("not finished").send(chunk);
        if sent.is_err() {
            return Err(self.join().err().unwrap_or_else(|| "the table writer stopped".into()));
        }
        Ok(())
    }

    /// A packet-log chunk already written, whose buffers the log may reuse.
    pub fn written_packets(&mut self) -> Option<PacketLog> {
        self.written.try_recv().ok()
    }

    /// Closes the files once every chunk is written; `Err` names the file that failed.
    pub fn finish(&mut self) -> Result<(), String> {
        self.join()
    }

    /// Stops the writer and removes what it wrote (a run that failed or was interrupted).
    pub fn abandon(mut self) {
        self.abort.store(true, Ordering::Relaxed);
        let _ = self.join();
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }

    fn join(&mut self) -> Result<(), String> {
        self.chunks = None;
        match self.thread.take() {
            Some(t) => t.join().unwrap_or_else(|panic| {
                let why = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                Err(format!("the table writer failed: {}", why.unwrap_or_default()))
            }),
            None => Ok(()),
        }
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// An error writing the file at `path`, naming it.
fn at(path: &std::path::Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

/// One table's file, opened at its first chunk, with that chunk's schema: its pandas metadata names the
/// category counts of that chunk, as the in-memory path's first chunk would.
struct Table {
    path: PathBuf,
    /// Once opened: the writer and the table's schema.
    writer: Option<(ArrowWriter<File>, Arc<Schema>)>,
    /// Sync each row group to disk as it is written (a table streamed while the engine runs).
    sync_each: bool,
}

impl Table {
    fn new(path: PathBuf, sync_each: bool) -> Table {
        Table { path, writer: None, sync_each }
    }

    /// Writes `cols` as a row group (no rows: only opens the file, so that a table without rows still
    /// has its schema). Categorical columns are dictionary-encoded, the rest plain.
    fn write(&mut self, cols: Vec<Column>, pandas_version: &str) -> Result<(), String> {
        if self.writer.is_none() {
            let file = File::create(&self.path).map_err(|e| at(&self.path, e))?;
            // As pyarrow writes by default: snappy, statistics per column chunk (no page index).
            let mut props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_statistics_enabled(EnabledStatistics::Chunk)
                .set_dictionary_enabled(false);
            for c in cols.iter().filter(|c| c.categories.is_some()) {
                props = props.set_column_dictionary_enabled(ColumnPath::from(c.name.as_str()), true);
            }
            let schema = schema(&cols, pandas_version);
            let w = ArrowWriter::try_new(file, schema.clone(), Some(props.build())).map_err(|e| at(&self.path, e))?;
            self.writer = Some((w, schema));
        }
        let ((w, schema), path) = (self.writer.as_mut().expect("opened"), &self.path);
        let batch = RecordBatch::try_new(schema.clone(), cols.into_iter().map(|c| c.array).collect()).map_err(|e| at(path, e))?;
        if batch.num_rows() > 0 {
            w.write(&batch).map_err(|e| at(path, e))?;
            w.flush().map_err(|e| at(path, e))?;
            // To disk now, on this thread, while the engine runs: the sync at the close then has little
            // more than the last rows and the footer to write (ns-3's anchor: 28 ms after the run → ≈ 1 ms).
            // What parquet's own 8-KiB buffer still holds goes with the next row group.
            if self.sync_each {
                w.inner().sync_data().map_err(|e| at(path, e))?;
            }
        }
        Ok(())
    }

    /// Writes the footer; with `sync`, flushes the file to disk (not for files about to be removed).
    fn close(&mut self, sync: bool) -> Result<(), String> {
        if let Some((w, _)) = self.writer.take() {
            let file = w.into_inner().map_err(|e| at(&self.path, e))?;
            if sync {
                file.sync_all().map_err(|e| at(&self.path, e))?;
            }
        }
        Ok(())
    }
}

fn write_all(chunks: Receiver<Chunk>, back: SyncSender<PacketLog>, files: TableFiles, labels: Labels, abort: Arc<AtomicBool>) -> Result<(), String> {
    let mut packets = Table::new(files.packets, true);
    let mut tx = Table::new(files.tx, true);
    let mut rtt = Table::new(files.rtt, true);
    let mut frames = Table::new(files.frames, true);
    let (flows, version) = (&labels.flows, labels.pandas_version.as_str());
    for chunk in chunks {
        if abort.load(Ordering::Relaxed) {
            break;
        }
        match chunk {
            Chunk::Packets(log) => {
                packets.write(packet_columns(&log, flows), version)?;
                let _ = back.try_send(log);
            }
            Chunk::Tx(log, links) => tx.write(tx_columns(&log, &links), version)?,
            Chunk::Rtt(series) => rtt.write(rtt_columns(&series, flows), version)?,
            Chunk::Frames(series) => frames.write(frame_columns(&series, flows), version)?,
            Chunk::RunEnded => {
                for t in [&mut packets, &mut tx, &mut rtt, &mut frames] {
                    t.sync_each = false;
                }
            }
        }
    }
    let sync = !abort.load(Ordering::Relaxed);
    for t in [&mut packets, &mut tx, &mut rtt, &mut frames] {
        t.close(sync)?;
    }
    Ok(())
}

/// Writes `flows.parquet` (one row per flow) to `path` and syncs it. Its schema is [`FlowSummary`]'s,
/// whichever values are missing ([`flow_dtypes`]), where pandas' inference from the rows had typed a
/// column with a missing count as float and an all-missing one as null.
pub(crate) fn write_flows(path: &Path, flows: &[FlowSummary], pandas_version: &str) -> Result<(), String> {
    let blank = FlowSummary::default();
    let rows: Vec<_> = flows.iter().map(FlowSummary::fields).collect();
    let cols = blank
        .fields()
        .iter()
        .enumerate()
        .map(|(i, &(name, kind))| {
            let values = rows.iter().map(move |r| r[i].1);
            match kind {
                FlowField::Text(_) => {
                    let array = Arc::new(StringArray::from_iter_values(values.map(|v| match v {
                        FlowField::Text(s) => s,
                        _ => unreachable!("one type per column"),
                    })));
                    // As pyarrow writes a column of Python strings.
                    Column { name: name.into(), array, pandas_type: "unicode", numpy_type: "object", categories: None }
                }
                FlowField::Count(_) => plain(name, Arc::new(Int64Array::from_iter_values(values.map(|v| match v {
                    FlowField::Count(x) => x as i64,
                    _ => unreachable!("one type per column"),
                })))),
                FlowField::MaybeCount(_) => nullable_i64(name, values.map(|v| match v {
                    FlowField::MaybeCount(x) => x.map(|x| x as i64),
                    _ => unreachable!("one type per column"),
                })),
                FlowField::Real(_) | FlowField::MaybeReal(_) => float64(name, values.map(|v| match v {
                    FlowField::Real(x) => x,
                    FlowField::MaybeReal(x) => x.unwrap_or(f64::NAN),
                    _ => unreachable!("one type per column"),
                })),
                FlowField::Flag(_) => plain(name, Arc::new(BooleanArray::from_iter(values.map(|v| match v {
                    FlowField::Flag(x) => Some(x),
                    _ => unreachable!("one type per column"),
                })))),
            }
        })
        .collect();
    let mut table = Table::new(path.to_path_buf(), false);
    table.write(cols, pandas_version)?;
    table.close(true)
}

/// `flows.parquet`'s columns and the pandas dtype each reads back as (`str`, which pandas 2 makes
/// `object`; `int64`, `Int64`, `float64`, `bool`): what the in-memory flows table is built with, so that it equals the one read from the file.
pub(crate) fn flow_dtypes() -> Vec<(&'static str, &'static str)> {
    FlowSummary::default()
        .fields()
        .iter()
        .map(|&(name, kind)| {
            let dtype = match kind {
                FlowField::Text(_) => "str",
                FlowField::Count(_) => "int64",
                FlowField::MaybeCount(_) => "Int64",
                FlowField::Real(_) | FlowField::MaybeReal(_) => "float64",
                FlowField::Flag(_) => "bool",
            };
            (name, dtype)
        })
        .collect()
}

/// A column as pandas would hand it to Arrow.
struct Column {
    name: String,
    array: ArrayRef,
    /// pandas' name of the column's type (`categorical`, `int64`, ...) and numpy's (`Int64` for a
    /// nullable integer column).
    pandas_type: &'static str,
    numpy_type: &'static str,
    /// For a categorical: its categories, in order.
    categories: Option<Vec<String>>,
}

fn plain(name: &str, array: ArrayRef) -> Column {
    let t = match array.data_type() {
        DataType::UInt32 => "uint32",
        DataType::UInt64 => "uint64",
        DataType::Int64 => "int64",
        DataType::Float64 => "float64",
        DataType::Boolean => "bool",
        other => unreachable!("no column of type {other}"),
    };
    Column { name: name.into(), array, pandas_type: t, numpy_type: t, categories: None }
}

/// A nullable int64 column (pandas' `Int64`): `None` where missing.
fn nullable_i64(name: &str, values: impl Iterator<Item = Option<i64>>) -> Column {
    let array = Arc::new(Int64Array::from_iter(values));
    Column { name: name.into(), array, pandas_type: "int64", numpy_type: "Int64", categories: None }
}

/// A categorical column: codes into `categories` (`None`: missing). The codes take the narrowest signed
/// integer whose maximum exceeds the number of categories, as pandas picks them.
/// Labels are large strings, as pandas 3 hands its `str` labels to Arrow (pyarrow reads dictionary labels
/// back as plain strings whichever was written, so pandas 2's files read the same).
fn categorical(name: &str, codes: impl Iterator<Item = Option<usize>>, categories: &[String]) -> Column {
    let n = categories.len();
    let values: ArrayRef =
        if n == 0 { Arc::new(NullArray::new(0)) } else { Arc::new(LargeStringArray::from_iter_values(categories)) };
    let (array, numpy_type): (ArrayRef, _) = if n < i8::MAX as usize {
        let keys = Int8Array::from_iter(codes.map(|c| c.map(|c| c as i8)));
        (Arc::new(DictionaryArray::<Int8Type>::try_new(keys, values).expect("codes within the categories")), "int8")
    } else if n < i16::MAX as usize {
        let keys = Int16Array::from_iter(codes.map(|c| c.map(|c| c as i16)));
        (Arc::new(DictionaryArray::<Int16Type>::try_new(keys, values).expect("codes within the categories")), "int16")
    } else {
        let keys = Int32Array::from_iter(codes.map(|c| c.map(|c| c as i32)));
        (Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values).expect("codes within the categories")), "int32")
    };
    Column { name: name.into(), array, pandas_type: "categorical", numpy_type, categories: Some(categories.to_vec()) }
}

/// Floats as `pa.array(..., from_pandas=True)` takes them: NaN is missing.
fn float64(name: &str, values: impl Iterator<Item = f64>) -> Column {
    plain(name, Arc::new(Float64Array::from_iter(values.map(|v| (!v.is_nan()).then_some(v)))))
}

fn u64_as_i64(name: &str, v: &[u64]) -> Column {
    plain(name, Arc::new(Int64Array::from_iter_values(v.iter().map(|&x| x as i64))))
}

/// Narrow unsigned integers as numpy widens them (`astype(np.int64)`).
fn widened<T: Copy + Into<i64>>(name: &str, v: &[T]) -> Column {
    plain(name, Arc::new(Int64Array::from_iter_values(v.iter().map(|&x| x.into()))))
}

fn packet_columns(log: &PacketLog, flows: &[String]) -> Vec<Column> {
    let mut cols = vec![
        categorical("flow", log.flow.iter().map(|&f| Some(f as usize)), flows),
        plain("flow_id", Arc::new(UInt32Array::from(log.flow.clone()))),
        plain("seq", Arc::new(UInt64Array::from(log.seq.clone()))),
        plain("size_bytes", Arc::new(UInt32Array::from(log.size.clone()))),
        plain("packet_id", Arc::new(UInt64Array::from(log.ids()))),
    ];
    for st in Stage::ALL {
        let v = &log.stages[*st as usize];
        cols.push(nullable_i64(st.column(), v.iter().map(|&t| (t != NO_TIME).then_some(t as i64))));
    }
    let (sent, delivered) = (&log.stages[Stage::Sent as usize], &log.stages[Stage::Delivered as usize]);
    cols.push(float64(
        "latency_ms",
        sent.iter().zip(delivered).map(|(&s, &d)| if d == NO_TIME { f64::NAN } else { d.wrapping_sub(s) as f64 / 1e6 }),
    ));
    let reasons: Vec<String> = (1..=5).map(|c| DropReason::from_code(c).name().to_string()).collect();
    let codes = log.drop_reason.iter().map(|&r| (r > 0).then(|| r as usize - 1));
    cols.push(categorical("drop_reason", codes, &reasons));
    cols.push(plain("reverse", Arc::new(BooleanArray::from_iter(log.reverse.iter().map(|&r| Some(r != 0))))));
    cols
}

fn tx_columns(t: &TxLog, links: &[(String, String)]) -> Vec<Column> {
    // A link end's categories: the names in the order the links first name them.
    let end = |pick: fn(&(String, String)) -> &String| {
        let mut names: Vec<String> = Vec::new();
        let code: Vec<usize> = links
            .iter()
            .map(|l| match names.iter().position(|n| n == pick(l)) {
                Some(i) => i,
                None => {
                    names.push(pick(l).clone());
                    names.len() - 1
                }
            })
            .collect();
        (names, code)
    };
    let (src, src_code) = end(|l| &l.0);
    let (dst, dst_code) = end(|l| &l.1);
    let link_names: Vec<String> = links.iter().map(|(a, b)| format!("{a}->{b}")).collect();
    vec![
        u64_as_i64("t_ns", &t.t_ns),
        categorical("link", t.link.iter().map(|&l| Some(l as usize)), &link_names),
        categorical("src", t.link.iter().map(|&l| Some(src_code[l as usize])), &src),
        categorical("dst", t.link.iter().map(|&l| Some(dst_code[l as usize])), &dst),
        widened("mcs", &t.mcs),
        widened("nss", &t.nss),
        float64("rate_mbps", t.rate_mbps.iter().map(|&x| x as f64)),
        float64("snr_db", t.snr_db.iter().map(|&x| x as f64)),
        widened("mpdus", &t.mpdus),
        widened("received", &t.received),
        plain("collided", Arc::new(BooleanArray::from_iter(t.collided.iter().map(|&c| Some(c))))),
    ]
}

fn rtt_columns(r: &RttSeries, flows: &[String]) -> Vec<Column> {
    vec![
        categorical("flow", r.flow.iter().map(|&f| Some(f as usize)), flows),
        u64_as_i64("t_ns", &r.t),
        float64("rtt_ms", r.rtt.iter().map(|&x| x as f64 / 1e6)),
    ]
}

fn frame_columns(f: &FrameSeries, flows: &[String]) -> Vec<Column> {
    vec![
        categorical("flow", f.flow.iter().map(|&x| Some(x as usize)), flows),
        u64_as_i64("frame", &f.frame),
        u64_as_i64("capture_ns", &f.capture),
        u64_as_i64("done_ns", &f.done),
        float64("delay_ms", f.done.iter().zip(&f.capture).map(|(&d, &c)| (d as i64).wrapping_sub(c as i64) as f64 / 1e6)),
        plain("dropped", Arc::new(BooleanArray::from_iter(f.dropped.iter().map(|&d| Some(d != 0))))),
    ]
}

/// A table's schema: its columns' types, the pandas metadata `pa.Schema.from_pandas` writes for them
/// (its JSON, key order and spacing included, but for its `creator`, which names this writer) and the
/// categories of its categorical columns ([`CATEGORIES_KEY`]).
fn schema(cols: &[Column], pandas_version: &str) -> Arc<Schema> {
    let s = |x: &str| serde_json::Value::from(x).to_string();
    let described: Vec<String> = cols
        .iter()
        .map(|c| {
            let meta = match &c.categories {
                Some(names) => format!("{{\"num_categories\": {}, \"ordered\": false}}", names.len()),
                None => "null".into(),
            };
            format!(
                "{{\"name\": {}, \"field_name\": {}, \"pandas_type\": {}, \"numpy_type\": {}, \"metadata\": {meta}}}",
                s(&c.name),
                s(&c.name),
                s(c.pandas_type),
                s(c.numpy_type)
            )
        })
        .collect();
    let pandas = format!(
        "{{\"index_columns\": [], \"column_indexes\": [], \"columns\": [{}], \"attributes\": {{}}, \"creator\": {{\"library\": \"lasthop\", \"version\": {}}}, \"pandas_version\": {}}}",
        described.join(", "),
        s(env!("CARGO_PKG_VERSION")),
        s(pandas_version)
    );
    let categories: serde_json::Map<String, serde_json::Value> =
        cols.iter().filter_map(|c| Some((c.name.clone(), c.categories.clone()?.into()))).collect();
    let metadata = HashMap::from([
        ("pandas".to_string(), pandas),
        (CATEGORIES_KEY.to_string(), serde_json::Value::Object(categories).to_string()),
    ]);
    let fields: Vec<Field> = cols.iter().map(|c| Field::new(&c.name, c.array.data_type().clone(), true)).collect();
    Arc::new(Schema::new_with_metadata(fields, metadata))
}
