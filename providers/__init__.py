"""Provider adapters: one module per API family, pure converters beside a thin IO class."""
