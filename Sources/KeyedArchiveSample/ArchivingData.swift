// The ArchivingData sample. See issue 4.
import KeyedArchive
