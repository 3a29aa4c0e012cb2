// swift-tools-version:6.0
import PackageDescription

// Layers, each depending only on the ones below it:
//
//   bytes <-> property-list values   KeyedArchivePropertyList (binary, XML, OpenStep codecs)
//         <-> object graph           KeyedArchiveGraph (keyed archiver / unarchiver, Foundation class coders)
//         <-> Codable bridge         KeyedArchiveCodable
//         <-> preferences store      KeyedArchivePreferences
//   KeyedArchive re-exports all of them; karchive is the command-line tool.
//   CKeyedArchiveShims (below them all) is a few C functions Swift cannot express: a cache
//   prefetch, acquire/release atomics, and the calling thread's stack bottom.
// Apple floors: the library needs macOS 11 / iOS 14 (`String(unsafeUninitializedCapacity:)`),
// the test-only benchmark kit and the tests `ContinuousClock` (macOS 13 / iOS 16), and SwiftPM
// takes one floor per package. Without one it builds for macOS 10.13, where neither exists.
// Linux ignores this list; no Apple build has been made here.
let package = Package(
    name: "KeyedArchive",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "KeyedArchive", targets: ["KeyedArchive"]),
        .library(name: "KeyedArchiveSample", targets: ["KeyedArchiveSample"]),
        .executable(name: "karchive", targets: ["karchive"]),
    ],
    targets: [
        .target(name: "CKeyedArchiveShims"),
        .target(name: "KeyedArchivePropertyList", dependencies: ["CKeyedArchiveShims"]),
        .target(name: "KeyedArchiveGraph", dependencies: ["CKeyedArchiveShims", "KeyedArchivePropertyList"]),
        .target(name: "KeyedArchiveCodable", dependencies: ["CKeyedArchiveShims", "KeyedArchiveGraph"]),
        .target(name: "KeyedArchivePreferences", dependencies: ["KeyedArchiveCodable"]),
        .target(
            name: "KeyedArchive",
            dependencies: [
                "KeyedArchivePropertyList", "KeyedArchiveGraph", "KeyedArchiveCodable", "KeyedArchivePreferences",
            ]
        ),
        .target(name: "KeyedArchiveSample", dependencies: ["KeyedArchive"], exclude: ["Images"]),
        .executableTarget(name: "karchive", dependencies: ["KeyedArchive", "KeyedArchiveSample"]),

        // Shared by the test targets only: seeded generators, the corpus index, peer bridges.
        .target(name: "KeyedArchiveTestSupport", dependencies: ["KeyedArchive"], path: "Tests/TestSupport"),
        .testTarget(name: "KeyedArchivePropertyListTests", dependencies: ["KeyedArchiveTestSupport"]),
        .testTarget(name: "KeyedArchiveGraphTests", dependencies: ["KeyedArchiveTestSupport"]),
        .testTarget(name: "KeyedArchiveCodableTests", dependencies: ["KeyedArchiveTestSupport", "KeyedArchiveSample"]),
        // The multi-process tests run the karchive binary as the second process.
        .testTarget(name: "KeyedArchivePreferencesTests", dependencies: ["KeyedArchiveTestSupport", "karchive"]),
        .testTarget(name: "KarchiveTests", dependencies: ["KeyedArchiveTestSupport", "KeyedArchiveSample", "karchive", "KeyedArchiveBenchmarkKit"]),

        // The benchmark harness's timing core and workloads (Benchmarks/ is its own package, built
        // in release; see README). Compiled here too, test-only and never a product, so that the
        // smoke test in KarchiveTests runs the same code in-process without a release build.
        .target(name: "KeyedArchiveBenchmarkKit", dependencies: ["KeyedArchive", "KeyedArchiveSample"], path: "Benchmarks/Sources/BenchmarkKit"),
    ],
    swiftLanguageModes: [.v6]
)
