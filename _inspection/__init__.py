"""What the commands that read a store without its host share (``asides inspect``, ``asides
compile``, ``asides serve``): a store's records read by namespace (``_records``), the report of a
whole store (``_report``), its pending upkeep (``_pending``), and the compile preview
(``_preview``), with the words they share (``_text``). The CLI (``asides._cli``) and the
inspector (``asides._serve``) import it; it imports neither. A strategy's records are read by the
strategy itself (``strategies._capabilities.DescribesRecords``): nothing here spells their keys."""
