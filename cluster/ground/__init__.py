"""The ground floor every room of ``cluster`` stands on, importing nothing above it (only
``swim``, for the membership settings' schema):

    errors      the ApiError tree (each error carries its HTTP status) and SettingsError
    ids         pool and node ids
    parse       the strict readers of numbers, ports, sizes, booleans (ASCII digits, ranged)
    safeyaml    the one YAML loader, with limits
    schema      the settings' sections: every field with its default, unit and range
    settings    how settings are loaded and layered, with each value's origin (and the
                schema's names re-exported)

Import the module you need (``from cluster.ground.errors import BadRequest``): this package
re-exports nothing, so reading ids does not load the settings.
"""
