import KeyedArchive
import KeyedArchiveGraph

/// Runs `make` twice: with every archive table laying its entries out itself, then with the
/// layout on a second thread from each table's `threshold`-th entry (``ArchiveObjectTable``'s
/// pipeline). Returns both results and how many second threads the second run started.
public func withAndWithoutLayoutPipeline<T>(threshold: Int = 2, _ make: () throws -> T) rethrows -> (direct: T, pipelined: T, started: Int) {
    defer { ArchiveObjectTable.pipelineThresholdOverride.value = nil }
    ArchiveObjectTable.pipelineThresholdOverride.value = .max
    let direct = try make()
    let before = layoutPipelineCounts.started
    ArchiveObjectTable.pipelineThresholdOverride.value = threshold
    let pipelined = try make()
    return (direct, pipelined, layoutPipelineCounts.started - before)
}

/// Second threads started for archive layouts so far, and those not joined yet.
public var layoutPipelineCounts: (started: Int, running: Int) {
    ArchiveObjectTable.pipelineCounts.withLock { $0 }
}
