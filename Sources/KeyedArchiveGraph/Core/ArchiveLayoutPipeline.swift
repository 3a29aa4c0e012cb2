import KeyedArchivePropertyList

/// One change to an ``ArchiveLayout``, recorded by the table and made on the layout's thread
/// in the order the table made it.
enum ArchiveLayoutStep {
    /// ``ArchiveLayout/newEntry()``, `count` times in a row.
    case newEntries(count: Int)
    /// ``ArchiveLayout/newEntry(string:)``: a new entry holding a string.
    case newString(String)
    /// ``ArchiveLayout/layOut(_:at:)``.
    case value(PropertyListValue, uid: UInt32)
    /// ``ArchiveLayout/layOutClassDescription(chain:hints:at:)``.
    case classDescription(chain: [String], hints: [String]?, uid: UInt32)
    /// ``ArchiveLayout/layOut(fields:array:at:)`` with the next `fieldCount` fields of the
    /// batch and, with an array key, its next `elementCount` elements.
    case object(fieldCount: Int, arrayKey: ArchiveSlot?, elementCount: Int, uid: UInt32)
    /// ``ArchiveLayout/intern(_:)``.
    case intern(PropertyListValue)
    /// ``ArchiveLayout/keepAside(_:)``.
    case keepAside(PropertyListValue)
    /// ``ArchiveLayout/copyEntry(from:to:)``.
    case copyEntry(from: Int, to: Int)
}

/// Steps handed over together (one lock and one wake-up for thousands of them), with the
/// objects' fields and array elements copied out of the encoder's reused buffers.
struct ArchiveLayoutBatch {
    let steps = LayoutStepList()
    /// The objects' fields and elements, in the order of their steps. A batch is handed over
    /// whole and its sender keeps no copy, so the lists go with it, one thread's at a time,
    /// ordered by the queues' lock (see ``ArchiveLayoutPipeline``).
    let fields = SlotBuffer<ArchiveField>()
    let elements = SlotBuffer<ArchiveSlot>()
    /// New entries recorded since the last step, made one `.newEntries` step by the next step
    /// (or by ``ArchiveLayout/apply(_:)``): an entry is made for every object and string, and
    /// a step each was about 100 instructions on the encoder's thread (callgrind, W2).
    private(set) var pendingNewEntries = 0

    /// Steps, fields or elements past which a batch is handed over.
    static let stepLimit = 4_096
    static let slotLimit = 16_384

    /// Records a new entry (see `pendingNewEntries`).
    @inline(__always)
    mutating func appendNewEntry() {
        pendingNewEntries &+= 1
    }

    /// Records a step; true when the batch should be handed over.
    @inline(__always)
    mutating func append(_ step: ArchiveLayoutStep) -> Bool {
        flushNewEntries()
        steps.append(step)
        return steps.count >= Self.stepLimit
    }

    /// Makes the pending new entries a step, so that they come before whatever is recorded next.
    @inline(__always)
    mutating func flushNewEntries() {
        guard pendingNewEntries > 0 else { return }
        steps.append(.newEntries(count: pendingNewEntries))
        pendingNewEntries = 0
    }

    /// Records an object's layout, copying its fields and elements; true when the batch should
    /// be handed over.
    mutating func appendObject(fields: UnsafeBufferPointer<ArchiveField>, array: (key: ArchiveSlot, elements: UnsafeBufferPointer<ArchiveSlot>)?, at uid: UInt32) -> Bool {
        flushNewEntries()
        self.fields.append(contentsOf: fields)
        if let array { elements.append(contentsOf: array.elements) }
        steps.append(.object(fieldCount: fields.count, arrayKey: array?.key, elementCount: array?.elements.count ?? 0, uid: uid))
        return steps.count >= Self.stepLimit || self.fields.count >= Self.slotLimit || elements.count >= Self.slotLimit
    }

    /// Empties the batch, keeping its memory for the next one.
    mutating func removeAll() {
        steps.removeAll()
        pendingNewEntries = 0
        fields.removeAll()
        elements.removeAll()
    }
}

/// A batch's steps, in memory the list owns, allocated once for a batch's ``ArchiveLayoutBatch/stepLimit``
/// steps and kept from round to round. As an array, each append was a uniqueness check and a
/// capacity check through the batch (about 40 instructions, two steps an object: W2, callgrind).
///
/// A class, so that the batch's copies share it; like the batch's lists, it is one thread's at
/// a time (see ``ArchiveLayoutBatch``), so its properties are not checked for exclusive access.
final class LayoutStepList {
    /// `capacity` steps, the first `count` set; nil until the first append (every table has a
    /// batch, and most never start the second thread).
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<ArchiveLayoutStep>?
    @exclusivity(unchecked) private var capacity = 0
    @exclusivity(unchecked) private(set) var count = 0

    /// An empty list; it allocates at its first append.
    init() {}

    deinit {
        base?.deinitialize(count: count)
        base?.deallocate()
    }

    /// Appends a step.
    @inline(__always)
    func append(_ step: consuming ArchiveLayoutStep) {
        if count == capacity { grow() }
        guard let base else { return }
        (base + count).initialize(to: step)
        count &+= 1
    }

    /// Makes room for a batch: at most two steps past its limit are recorded before it is
    /// handed over (pending new entries, then the step that reached it), so after the first
    /// growth this is not reached again while batches are handed over at their limit.
    @inline(never)
    private func grow() {
        let newCapacity = Swift.max(ArchiveLayoutBatch.stepLimit + 2, capacity &* 2)
        base = movedToNewMemory(base, count: count, capacity: newCapacity)
        capacity = newCapacity
    }

    /// Hands each step to `body` in order, moved out, and leaves the list empty.
    @inline(__always)
    func moveAll(_ body: (consuming ArchiveLayoutStep) -> Void) {
        guard let base else { return }
        let stored = count
        // Emptied first: the steps are moved out below, so none is left to destroy twice.
        count = 0
        for index in 0..<stored { body((base + index).move()) }
    }

    /// Destroys the steps, keeping the memory.
    func removeAll() {
        base?.deinitialize(count: count)
        count = 0
    }
}

/// An ``ArchiveLayout`` made on a second thread while the encoder goes on: the table records
/// each change as a step in a batch of its own, hands batches over, and takes the layout back
/// when it is written (or a question needs the layout itself).
///
/// Laying an object out (its keys', numbers' and members' references in the binary writer's
/// lists) is about a fifth of encoding W5's records and does not need to be done before the
/// encoder moves on: nothing the encoder asks for depends on it except the entries' UIDs, which
/// the table counts itself. The bytes are the same as when the table lays out entries itself:
/// the layout makes the same changes in the same order.
///
/// Batches go round between the two threads (``batchCount`` of them), so that the encoder waits
/// when the layout falls that far behind instead of holding ever more steps in memory, and
/// their steps and lists keep their memory from one round to the next.
///
/// `@unchecked Sendable`: the layout is the second thread's from ``init(layout:)`` to
/// ``finish(last:)``; a batch is the table's until it is put in `full`, and the second
/// thread's until it is put back in `empty` (the queues' lock orders both hand-overs).
final class ArchiveLayoutPipeline: @unchecked Sendable {
    private let full: HandoffQueue<ArchiveLayoutBatch?>
    private let empty: HandoffQueue<ArchiveLayoutBatch>
    private let worker: SecondThread<ArchiveLayout>
    private var isFinished = false

    /// A layout on its way to the second thread: the caller's until the thread starts, the
    /// thread's from then on.
    private final class HandedLayout: @unchecked Sendable {
        var layout = ArchiveLayout.standIn

        /// The layout, leaving a stand-in.
        func take() -> ArchiveLayout {
            var taken = ArchiveLayout.standIn
            swap(&taken, &layout)
            return taken
        }
    }

    /// Batches in circulation, the one being filled included.
    static let batchCount = 4

    /// Starts making `layout` on a second thread, leaving the caller a stand-in; nil (and the
    /// caller's layout as it was) when no thread can be started.
    init?(layout: inout ArchiveLayout) {
        let full = HandoffQueue<ArchiveLayoutBatch?>()
        let empty = HandoffQueue<ArchiveLayoutBatch>()
        // Moved through a box, not captured: a captured copy would share the layout's lists,
        // and the second thread's first change to each would copy all of it.
        let handed = HandedLayout()
        swap(&handed.layout, &layout)
        guard let worker = SecondThread<ArchiveLayout>.beside({
            var layout = handed.take()
            // Taken as the only copy, so that emptying it keeps its steps' memory.
            while var batch = full.take() {
                layout.apply(&batch)
                batch.removeAll()
                empty.put(batch)
            }
            return layout
        }) else {
            swap(&handed.layout, &layout)
            return nil
        }
        self.full = full
        self.empty = empty
        self.worker = worker
        for _ in 1..<Self.batchCount { empty.put(ArchiveLayoutBatch()) }
        ArchiveObjectTable.pipelineCounts.withLock {
            $0.started += 1
            $0.running += 1
        }
    }

    deinit {
        // A table dropped before it was written: the thread still holds the layout.
        _ = finish(last: ArchiveLayoutBatch())
    }

    /// Hands `batch` over and gives it an empty one (waiting for the second thread to free one
    /// when all are in use).
    func handOver(_ batch: inout ArchiveLayoutBatch?) {
        guard let handed = batch else { return }
        full.put(handed)
        batch = empty.take()
    }

    /// Hands over the `last` steps, waits for the second thread and returns the layout (nil on
    /// a second call).
    func finish(last: ArchiveLayoutBatch) -> ArchiveLayout? {
        guard !isFinished else { return nil }
        isFinished = true
        full.put(last)
        full.put(nil)
        let layout = worker.join()
        ArchiveObjectTable.pipelineCounts.withLock { $0.running -= 1 }
        return layout
    }
}

extension ArchiveLayout {
    /// Makes a batch's steps, in order, leaving the batch's steps with nothing to release.
    mutating func apply(_ batch: inout ArchiveLayoutBatch) {
        // New entries recorded after the last step (a batch is handed over right after a step,
        // so only the last batch can end with some).
        batch.flushNewEntries()
        var fieldStart = 0
        var elementStart = 0
        let fields = batch.fields
        let elements = batch.elements
        fields.withBuffer { fields in
            elements.withBuffer { elements in
                // Moved out: a copy retained each string here and released it again when the
                // batch was emptied, strings the encoder's thread had just retained.
                batch.steps.moveAll { step in
                    apply(consume step, fields: fields, elements: elements, fieldStart: &fieldStart, elementStart: &elementStart)
                }
            }
        }
    }

    /// Makes one step; an object's fields and elements are the next ones of the batch's.
    @inline(__always)
    private mutating func apply(
        _ step: consuming ArchiveLayoutStep, fields: UnsafeBufferPointer<ArchiveField>, elements: UnsafeBufferPointer<ArchiveSlot>,
        fieldStart: inout Int, elementStart: inout Int
    ) {
        switch consume step {
        case .newEntries(let count):
            for _ in 0..<count { _ = newEntry() }
        case .newString(let string):
            newEntry(string: string)
        case .value(let value, let uid):
            layOut(value, at: uid)
        case .classDescription(let chain, let hints, let uid):
            layOutClassDescription(chain: chain, hints: hints, at: uid)
        case .object(let fieldCount, let arrayKey, let elementCount, let uid):
            // The counts were those of the runs copied into the batch's lists.
            let objectFields = UnsafeBufferPointer(rebasing: fields[fieldStart..<(fieldStart + fieldCount)])
            fieldStart += fieldCount
            if let arrayKey {
                let objectElements = UnsafeBufferPointer(rebasing: elements[elementStart..<(elementStart + elementCount)])
                elementStart += elementCount
                layOut(fields: objectFields, array: (arrayKey, objectElements), at: uid)
            } else {
                layOut(fields: objectFields, array: nil, at: uid)
            }
        case .intern(let key):
            _ = intern(key)
        case .keepAside(let value):
            _ = keepAside(value)
        case .copyEntry(let from, let to):
            copyEntry(from: from, to: to)
        }
    }
}
