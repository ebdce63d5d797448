-- What the list of a person's sessions shows of where each was signed in: a short summary of the browser and
-- system ("Firefox on Linux") and the network the sign-in came from (a /24 or /48 prefix, never the whole
-- address). Both empty for sessions signed in before they were recorded.
alter table sessions add column device text;
alter table sessions add column ip_prefix text;
