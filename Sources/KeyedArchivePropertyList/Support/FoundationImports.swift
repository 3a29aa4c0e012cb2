// The property-list layer needs only Data and Date, which FoundationEssentials provides without
// pulling in ICU; fall back to Foundation where FoundationEssentials does not exist.
#if canImport(FoundationEssentials)
@_exported import FoundationEssentials
#else
@_exported import Foundation
#endif
