-- Issue 44, point 7: targets scored against their side's only input now have their own segments
-- (target/ask_only_input, target/bid_only_input) and are left out of every other figure
-- (src/valuation/accuracy.ts). The days whose closes are still kept are scored again by the next
-- valuation job (its start included): their rows are removed here, so they are pending again. Older days
-- (closes compacted away) cannot be scored again and keep the figures they were published with.
DELETE FROM "valuation_accuracy" WHERE "valuation_date" IN (SELECT DISTINCT "day" FROM "daily_close");
