// The shims are inline functions in include/CKeyedArchiveShims.h; a C target needs a source file.
#include "CKeyedArchiveShims.h"
