import KeyedArchivePropertyList

/// Which strings of a keyed archive are stored once: an equal string stored since the table last
/// started over, which it does every ``ArchiveObjectTable/stringLeafWindow`` new strings (or
/// after ``ArchiveObjectTable/stringLeafVerdict`` of them, when they rarely recurred); and,
/// while strings do not recur, none.
///
/// A window in which fewer than one string in ``rareRepeats`` is found again makes the next
/// windows store their strings without looking them up (one window, then two, four... up to
/// ``longestSkip`` after each such window in a row); the window after them looks strings up
/// again, and one with repeats ends the skipping. A window looking strings up is judged on its
/// first ``ArchiveObjectTable/stringLeafVerdict`` new strings too, and ends there if they had
/// rare repeats: a whole window of lookups before each verdict was most of the lookups of a
/// small archive (W5 at 10^3 records: three windows, two looked up; 1.18x faster with the early
/// verdict), which larger ones spend skipping. Looking up a string that is never found again
/// was a tenth of a W5 encode's instructions (its names, emails, streets, cities and tags recur
/// nowhere within a window): 265 instructions a string and a 196 KB table cleared every window.
/// Strings that recur within a window (kinds, states, a small set of tags) keep being found in
/// every window; rare repeats met in a skipped window are stored again, which changes no decoded
/// value (see ``ArchiveObjectTable/stringLeafWindow``).
struct StringLeafSharing {
    private var table = LiteralStringTable()
    /// New strings in this window.
    private var newStrings = 0
    /// Strings found again in this window.
    private var repeats = 0
    /// Windows left to store without lookups (0: looking strings up).
    private var skippedWindowsLeft = 0
    /// Windows to skip after the next window with rare repeats.
    private var nextSkip = 1

    /// A window with fewer repeats than one in this many new strings is one of rare repeats.
    static let rareRepeats = 64
    /// The most windows skipped in a row.
    static let longestSkip = 16

    /// The value stored for `string`'s text, or `nil` after storing `value` for it (or, in a
    /// skipped window, without storing it).
    @inline(__always)
    mutating func findOrInsert(_ string: String, _ value: Int) -> Int? {
        lookUp { $0.findOrInsert(string, value) }
    }

    /// ``findOrInsert(_:_:)`` for a ``PropertyListString``.
    @inline(__always)
    mutating func findOrInsert(_ string: PropertyListString, _ value: Int) -> Int? {
        lookUp { $0.findOrInsert(string, value) }
    }

    /// `findOrInsert` on the table, unless this window is skipped; counts what it found.
    @inline(__always)
    private mutating func lookUp(_ findOrInsert: (inout LiteralStringTable) -> Int?) -> Int? {
        if skippedWindowsLeft == 0, let found = findOrInsert(&table) {
            repeats &+= 1
            return found
        }
        countNew()
        return nil
    }

    @inline(__always)
    private mutating func countNew() {
        newStrings &+= 1
        if newStrings >= ArchiveObjectTable.stringLeafWindow {
            endWindow()
        } else if newStrings == ArchiveObjectTable.stringLeafVerdict && skippedWindowsLeft == 0
            && repeats < ArchiveObjectTable.stringLeafVerdict / Self.rareRepeats
        {
            // Rare repeats already: the window ends here, as one of rare repeats.
            endWindow()
        }
    }

    private mutating func endWindow() {
        newStrings = 0
        if skippedWindowsLeft > 0 {
            // The table was emptied when the skipping began.
            skippedWindowsLeft -= 1
            return
        }
        table.removeAll()
        if repeats < ArchiveObjectTable.stringLeafWindow / Self.rareRepeats {
            skippedWindowsLeft = nextSkip
            nextSkip = min(nextSkip &* 2, Self.longestSkip)
        } else {
            nextSkip = 1
        }
        repeats = 0
    }
}
