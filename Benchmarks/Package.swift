// swift-tools-version:6.0
import PackageDescription

// The benchmark harness: its own package so that `swift build` / `swift test` of the library never
// builds it. Run it in release from the repository root:
//
//   swift run -c release --package-path Benchmarks KeyedArchiveBenchmarks [--quick] [--json FILE]
//
// Sources/BenchmarkKit (timing core, workloads, peers, report) is also compiled into the root
// package as the test-only target `KeyedArchiveBenchmarkKit`, so that the root test suite's smoke
// test runs the same code in-process without a second release build.
let package = Package(
    name: "KeyedArchiveBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "KeyedArchive", path: ".."),
    ],
    targets: [
        .target(
            name: "BenchmarkKit",
            dependencies: [.product(name: "KeyedArchive", package: "KeyedArchive")]
        ),
        .executableTarget(
            name: "KeyedArchiveBenchmarks",
            dependencies: ["BenchmarkKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
