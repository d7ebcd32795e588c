"""Static files under prod: WhiteNoise's compressed, content-hashed files, ES module imports included.

The page is plain ES modules that import each other by relative path. Django rewrites those
``import … from "./x.js"`` lines to the hashed names only when asked to, so a browser holding a
cached (hashed, immutable) module never pairs it with a newer or older neighbour.
"""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedModuleStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
