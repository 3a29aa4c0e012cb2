// karchive: inspect, convert and edit property lists, keyed archives and preferences.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

exit(Karchive.main(Array(CommandLine.arguments.dropFirst())))
